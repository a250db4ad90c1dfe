//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenario_LandPushesTheBranchAndOpensAPullRequest: --push --pr pushes
// the branch to the repository's remote (a bare repository) and runs
// pr_command with {branch} replaced, printing the URL it printed; the
// harness is then stopped and its worktree removed. A remote that refuses
// the push (a pre-receive hook exiting 1) fails the land clearly and
// removes nothing.
func TestScenario_LandPushesTheBranchAndOpensAPullRequest(t *testing.T) {
	repo := newLandRepo(t)
	bare := t.TempDir()
	gitRun(t, bare, "init", "-q", "--bare")
	gitRun(t, repo, "remote", "add", "origin", bare)

	refusing := newLandRepo(t)
	refuser := t.TempDir()
	gitRun(t, refuser, "init", "-q", "--bare")
	landPut(t, filepath.Join(refuser, "hooks", "pre-receive"), "#!/bin/sh\necho no pushes here >&2\nexit 1\n")
	os.Chmod(filepath.Join(refuser, "hooks", "pre-receive"), 0o755)
	gitRun(t, refusing, "remote", "add", "origin", refuser)

	dir := t.TempDir()
	argsFile := filepath.Join(dir, "pr-args")
	pr := filepath.Join(dir, "pr.sh")
	landPut(t, pr, fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\npwd >> %s\necho Creating pull request\necho https://example.test/pull/7\n", argsFile, argsFile))
	os.Chmod(pr, 0o755)

	f := newFleet(t, fmt.Sprintf(`
[harness.p]
cmd = "sh"
args = ["-c", "echo pushed > p.txt; exec sleep 100000"]
worktree = { repo = %q, base = "main" }
pr_command = [%q, "--head", "{branch}", "--base", "{base}"]

[harness.r]
cmd = "sh"
args = ["-c", "echo refused > r.txt; exec sleep 100000"]
worktree = { repo = %q, base = "main" }
`, repo, pr, refusing))
	f.MustRun("start", "p", "r")
	pwt, rwt := f.worktree("p").Path, f.worktree("r").Path
	f.WaitFor("the agents' work", 20*time.Second, func() bool {
		return landExists(filepath.Join(pwt, "p.txt")) && landExists(filepath.Join(rwt, "r.txt"))
	})
	pid := f.waitState("p", "running").PID

	var r landResult
	f.MustJSON(&r, "land", "p", "--pr", "--message", "p: pushed work")
	if r.Mode != "push" || !r.Pushed || r.Merged || r.PRURL != "https://example.test/pull/7" || !r.Removed {
		t.Fatalf("land --pr: %+v", r)
	}
	if got := gitRun(t, bare, "rev-parse", "refs/heads/harness/p"); got != r.Commit {
		t.Fatalf("the remote has harness/p at %s, land says %s", got, r.Commit)
	}
	if msg := gitRun(t, bare, "log", "-1", "--format=%B", "harness/p"); !strings.HasPrefix(msg, "p: pushed work") || !strings.Contains(msg, "Harness: p") {
		t.Fatalf("pushed commit:\n%s", msg)
	}
	args := strings.Split(strings.TrimSpace(landRead(t, argsFile)), "\n")
	if len(args) != 5 || strings.Join(args[:4], " ") != "--head harness/p --base main" || args[4] != pwt {
		t.Fatalf("pr_command got %q (want --head harness/p --base main, run in %s)", args, pwt)
	}
	if gitRun(t, repo, "rev-parse", "main") == r.Commit {
		t.Fatal("--push merged into main too")
	}
	if landExists(pwt) {
		t.Fatal("p's worktree is still there")
	}
	waitGone(t, "p's process", pid)

	// A refused push: an error saying so, and nothing removed.
	out, errOut, code := f.Run("land", "r", "--push")
	if code == 0 || !strings.Contains(errOut, "push") || !strings.Contains(errOut, "nothing was removed") {
		t.Fatalf("land to a refusing remote: exit %d\n%s%s", code, out, errOut)
	}
	if !landExists(filepath.Join(rwt, "r.txt")) || gitRun(t, refusing, "branch", "--list", "harness/r") == "" {
		t.Fatal("the refused push removed the worktree or the branch")
	}
	if _, err := os.Stat(filepath.Join(refuser, "refs", "heads", "harness", "r")); err == nil {
		t.Fatal("the refusing remote has the branch")
	}

	// No remote at all: refused before anything changes.
	gitRun(t, refusing, "remote", "remove", "origin")
	if _, errOut, code := f.Run("land", "r", "--push"); code == 0 || !strings.Contains(errOut, "no remote") {
		t.Fatalf("land --push without a remote: exit %d %s", code, errOut)
	}
	// The failed pushes left no land to complete: merging it instead is a
	// land of its own, which finds the commit the first one made.
	var m landResult
	f.MustJSON(&m, "land", "r")
	if m.Mode != "fast-forward" || !m.Removed || len(m.Notes) != 0 || landRead(t, filepath.Join(refusing, "r.txt")) != "refused\n" {
		t.Fatalf("land after the refused pushes: %+v", m)
	}
}
