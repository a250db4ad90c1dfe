//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_ALandTheDaemonDidNotLiveToFinishIsCompletedByTheNext: the
// daemon is SIGKILLed while a land runs its (slow) teardown, after the
// merge; a second land after a restart finds base already has the branch,
// says it completes the interrupted land, and removes the worktree. The
// base got the work exactly once.
func TestScenario_ALandTheDaemonDidNotLiveToFinishIsCompletedByTheNext(t *testing.T) {
	repo := newLandRepo(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "teardown-started")
	f := newFleet(t, fmt.Sprintf(`
[harness.c]
cmd = "sh"
args = ["-c", "echo work > c.txt; exec sleep 100000"]
worktree = { repo = %q, base = "main" }
teardown = ["sh", "-c", "if [ -e %s ]; then exit 0; fi; touch %s; exec sleep 120"]
`, repo, mark, mark))
	f.MustRun("start", "c")
	wt := f.worktree("c").Path
	f.WaitFor("c's work", 20*time.Second, func() bool { return landExists(filepath.Join(wt, "c.txt")) })
	base := gitRun(t, repo, "rev-parse", "main")

	land := exec.Command(harnessBin, "--socket", f.Socket, "land", "c", "--json")
	land.Env = daemonEnv()
	if err := land.Start(); err != nil {
		t.Fatal(err)
	}
	f.WaitFor("the land's teardown", 60*time.Second, func() bool { return landExists(mark) })
	f.kill()
	if err := land.Wait(); err == nil {
		t.Fatal("the land said it succeeded though its daemon was killed")
	}
	if !landExists(wt) {
		t.Fatal("the worktree went before the teardown ended")
	}
	merged := gitRun(t, repo, "rev-parse", "main")
	if merged == base || landRead(t, filepath.Join(repo, "c.txt")) != "work\n" {
		t.Fatal("the merge had not happened before the teardown")
	}

	f.start()
	var r landResult
	f.MustJSON(&r, "land", "c")
	if !r.Removed || !r.Merged || r.Commit != merged || !strings.Contains(strings.Join(r.Notes, " "), "interrupted land") {
		t.Fatalf("second land: %+v", r)
	}
	if landExists(wt) {
		t.Fatal("the second land left the worktree")
	}
	if got := gitRun(t, repo, "rev-parse", "main"); got != merged {
		t.Fatalf("main moved again: %s, was %s", got, merged)
	}
	if n := gitRun(t, repo, "rev-list", "--count", base+"..main"); n != "1" {
		t.Fatalf("main has %s new commits, want the one", n)
	}
	// A third land has nothing left to do: a clear error, no journal.
	if _, errOut, code := f.Run("land", "c"); code == 0 || !strings.Contains(errOut, "no worktree") {
		t.Fatalf("third land: exit %d %s", code, errOut)
	}
}
