//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenario_TheDemoAgentsEditLandsAndABusyAgentIsLandedOnlyByForce:
// the demo agent, in a worktree, asks to edit README.md, is answered Yes,
// and is ready: `harness land` commits its edit, fast-forwards main to it,
// stops it (its process gone) and removes the worktree. An agent still
// working is refused, saying so; --force lands it.
func TestScenario_TheDemoAgentsEditLandsAndABusyAgentIsLandedOnlyByForce(t *testing.T) {
	repo := newLandRepo(t)
	landPut(t, filepath.Join(repo, "README.md"), "# app\n")
	gitRun(t, repo, "add", "README.md")
	gitRun(t, repo, "commit", "-q", "-m", "readme")
	f := newFleet(t, fmt.Sprintf(`
[harness.demo]
cmd = %[1]q
args = ["demo-agent", "--step", "300ms"]
agent = "demo"
worktree = { repo = %[2]q, base = "main" }
prompt = "Edit the README"
enabled = true

[harness.busy]
cmd = %[1]q
args = ["demo-agent", "--step", "1m"]
agent = "demo"
worktree = { repo = %[2]q, base = "main" }
prompt = "Take your time"
enabled = true
`, harnessBin, repo))
	// Boot makes the worktrees before it starts them.
	f.waitState("demo", "running")
	f.waitAgent("demo", "waiting")
	f.MustRun("answer", "demo", "Yes")
	f.waitAgent("demo", "ready")
	wt, pid := f.worktree("demo").Path, f.unit("demo").PID
	var r landResult
	f.MustJSON(&r, "land", "demo")
	if r.Mode != "fast-forward" || !r.Removed || r.Committed == "" {
		t.Fatalf("land demo: %+v", r)
	}
	if !strings.Contains(landRead(t, filepath.Join(repo, "README.md")), "written by the harness demo agent") {
		t.Fatal("the agent's edit is not on main")
	}
	if msg := gitRun(t, repo, "log", "-1", "--format=%B"); !strings.Contains(msg, "Harness: demo") || !strings.Contains(msg, "Agent: demo") {
		t.Fatalf("commit message:\n%s", msg)
	}
	if landExists(wt) {
		t.Fatal("the worktree is still there")
	}
	waitGone(t, "the demo agent", pid)

	f.waitState("busy", "running")
	f.waitAgent("busy", "working")
	bwt, bpid := f.worktree("busy").Path, f.unit("busy").PID
	landPut(t, filepath.Join(bwt, "half.txt"), "half done\n")
	if _, errOut, code := f.Run("land", "busy"); code == 0 || !strings.Contains(errOut, "working") || !strings.Contains(errOut, "--force") {
		t.Fatalf("land of a working agent: exit %d %s", code, errOut)
	}
	if !landExists(filepath.Join(bwt, "half.txt")) || f.unit("busy").PID != bpid {
		t.Fatal("the refused land touched the working agent")
	}
	f.MustJSON(&r, "land", "busy", "--force", "--message", "busy: as far as it got")
	if !r.Removed || landRead(t, filepath.Join(repo, "half.txt")) != "half done\n" {
		t.Fatalf("land --force: %+v", r)
	}
	waitGone(t, "the busy agent", bpid)
}
