package control

import (
	"context"
	"os/exec"
	"sync"
	"testing"

	"github.com/harness-dev/harness/internal/proctree"

	"github.com/harness-dev/harness/internal/testenv"
)

// The daemon's orphan reaper reaps every zombie child it was not told
// about. Worktree git commands run while other children exit (units,
// notify commands) and each exit sends a reaper pass: git must be started
// through it, or a pass can take git's exit status and its Wait fails
// (ECHILD), which ensureWorktree reads as "no such branch" and may answer
// with `git branch -D`. Here 200 git commands run beside a stream of
// exiting children; unregistered, several percent of them failed.
func TestScenario_WorktreeGitIsNeverTakenByTheOrphanReaper(t *testing.T) {
	testenv.Program(t, "git")
	ctx, cancel := context.WithCancel(context.Background())
	r := proctree.NewReaper(nil)
	r.Start(ctx)
	defer func() { cancel(); r.Stop() }()
	c := &Control{opt: Options{Reaper: r}}
	repo := t.TempDir()
	if _, err := c.git(ctx, repo, "init", "--quiet"); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // children exiting all along: a reaper pass each
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Unregistered on purpose: the reaper may take these.
			_ = exec.Command("true").Run()
		}
	})
	failed := 0
	for i := 0; i < 200; i++ {
		if _, err := c.git(ctx, repo, "rev-parse", "--git-dir"); err != nil {
			if failed++; failed == 1 {
				t.Errorf("git rev-parse failed: %v", err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if failed > 0 {
		t.Errorf("%d of 200 git commands failed", failed)
	}
}
