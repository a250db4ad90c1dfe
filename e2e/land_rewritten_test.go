//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_ABranchRewrittenUnderTheAgentLandsAndSaysSo: the agent
// resets its branch behind where its worktree started and commits there;
// the land merges what the branch now is (the base keeps its own commit)
// and its notes say the branch was rewritten.
func TestScenario_ABranchRewrittenUnderTheAgentLandsAndSaysSo(t *testing.T) {
	repo := newLandRepo(t)
	landPut(t, filepath.Join(repo, "second.txt"), "second\n")
	gitRun(t, repo, "add", "second.txt")
	gitRun(t, repo, "commit", "-q", "-m", "second")
	f := newFleet(t, fmt.Sprintf(`
[harness.rw]
cmd = "sh"
args = ["-c", "git reset -q --hard HEAD~1 && echo rw > rw.txt && git add rw.txt && git commit -qm rewritten && touch rw.done; exec sleep 100000"]
worktree = { repo = %q, base = "main" }
%s
`, repo, gitEnvTOML))
	f.MustRun("start", "rw")
	wt := f.worktree("rw").Path
	f.WaitFor("the rewrite", 20*time.Second, func() bool { return landExists(filepath.Join(wt, "rw.done")) })
	var r landResult
	f.MustJSON(&r, "land", "rw")
	if notes := strings.Join(r.Notes, " "); r.Mode != "merge" || !r.Removed || !strings.Contains(notes, "rewritten") || strings.Contains(notes, "moved on") {
		t.Fatalf("land rw: %+v", r)
	}
	if landRead(t, filepath.Join(repo, "rw.txt")) != "rw\n" || landRead(t, filepath.Join(repo, "second.txt")) != "second\n" {
		t.Fatal("the merge lost the base's commit or the branch's")
	}
}
