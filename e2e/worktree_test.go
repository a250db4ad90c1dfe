//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	testenv.Program(t, "git")
	c := exec.Command("git", append([]string{"-C", dir}, args...)...)
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

type worktreeView struct {
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Path    string `json:"path"`
	Created bool   `json:"created"`
}

func (f *fleet) worktree(name string) worktreeView {
	f.T.Helper()
	var d struct {
		Config struct {
			Worktree *worktreeView `json:"worktree"`
		} `json:"config"`
	}
	f.MustJSON(&d, "describe", name)
	if d.Config.Worktree == nil {
		f.T.Fatalf("describe %s shows no worktree", name)
	}
	return *d.Config.Worktree
}

// TestScenario_EachHarnessWorksInAGitWorktreeOfItsOwn, with real git: two harnesses with worktrees of one
// repository each get their own directory and branch, and what one writes
// is not in the other; a restart keeps the worktree; remove refuses a
// dirty one without --force; a bad repository, a branch checked out
// elsewhere and a dirty base fail the start clearly, leaving nothing.
func TestScenario_EachHarnessWorksInAGitWorktreeOfItsOwn(t *testing.T) {
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "README"), []byte("base\n"), 0o644)
	gitRun(t, repo, "add", "README")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	notRepo := t.TempDir()
	write := func(file string) string {
		return fmt.Sprintf(`["-c", "echo run >> %s; git branch --show-current > branch.txt; exec sleep 100000"]`, file)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.a]
cmd = "sh"
args = %s
worktree = { repo = %q, base = "main" }

[harness.b]
cmd = "sh"
args = %s
workdir = %q
worktree = true

[harness.bad]
cmd = "true"
worktree = { repo = %q }

[harness.taken]
cmd = "true"
worktree = { repo = %q, branch = "main" }

[harness.dirty]
cmd = "true"
worktree = { repo = %q }
`, write("a.txt"), repo, write("b.txt"), repo, notRepo, repo, repo))

	f.MustRun("start", "a", "b")
	f.waitState("a", "running")
	f.waitState("b", "running")
	wa, wb := f.worktree("a"), f.worktree("b")
	if wa.Path == wb.Path || wa.Branch != "harness/a" || wb.Branch != "harness/b" || !wa.Created || !wb.Created || wb.Repo != repo {
		t.Fatalf("worktrees a %+v, b %+v", wa, wb)
	}
	readFile := func(path string) string {
		var b []byte
		f.WaitFor(path, 10*time.Second, func() bool {
			var err error
			b, err = os.ReadFile(path)
			return err == nil && len(b) > 0
		})
		return strings.TrimSpace(string(b))
	}
	if got := readFile(filepath.Join(wa.Path, "branch.txt")); got != "harness/a" {
		t.Fatalf("a runs on branch %q", got)
	}
	if got := readFile(filepath.Join(wb.Path, "branch.txt")); got != "harness/b" {
		t.Fatalf("b runs on branch %q", got)
	}
	readFile(filepath.Join(wa.Path, "a.txt"))
	readFile(filepath.Join(wb.Path, "b.txt"))
	for _, p := range []string{filepath.Join(wa.Path, "b.txt"), filepath.Join(wb.Path, "a.txt"), filepath.Join(repo, "a.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: the worktrees share files", p)
		}
	}

	// A restart keeps the worktree and what the last run left in it.
	f.MustRun("restart", "a")
	f.WaitFor("a's second run to write", 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(wa.Path, "a.txt"))
		return strings.Count(string(b), "run") == 2
	})
	if f.worktree("a").Path != wa.Path {
		t.Fatal("restart moved the worktree")
	}

	// Remove: refused while running, refused dirty, done with --force.
	if _, errOut, code := f.Run("worktree", "remove", "a"); code == 0 || !strings.Contains(errOut, "stop it") {
		t.Fatalf("remove of a running harness's worktree: %d %s", code, errOut)
	}
	f.MustRun("stop", "a")
	f.waitState("a", "stopped")
	if _, errOut, code := f.Run("worktree", "remove", "a"); code == 0 || !strings.Contains(errOut, "uncommitted changes") {
		t.Fatalf("remove of a dirty worktree: %d %s", code, errOut)
	}
	if _, err := os.Stat(wa.Path); err != nil {
		t.Fatalf("a refused remove removed it: %v", err)
	}
	f.MustRun("worktree", "remove", "a", "--force")
	if _, err := os.Stat(wa.Path); err == nil {
		t.Fatal("worktree remove --force left the directory")
	}
	if gitRun(t, repo, "branch", "--list", "harness/a") == "" {
		t.Fatal("the branch went with the worktree")
	}

	// Clear errors at start, and nothing half-created.
	for name, want := range map[string]string{"bad": "is not a git repository", "taken": `branch "main" is already checked out at ` + repo} {
		_, errOut, code := f.Run("start", name)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("start %s: exit %d, %q; want %q", name, code, errOut, want)
		}
		if _, err := os.Stat(f.worktree(name).Path); err == nil {
			t.Errorf("a failed start of %s left %s", name, f.worktree(name).Path)
		}
	}
	os.WriteFile(filepath.Join(repo, "README"), []byte("changed\n"), 0o644)
	if _, errOut, code := f.Run("start", "dirty"); code == 0 || !strings.Contains(errOut, "uncommitted changes") {
		t.Errorf("start with a dirty base: %d %s", code, errOut)
	}
	if _, err := os.Stat(f.worktree("dirty").Path); err == nil || gitRun(t, repo, "branch", "--list", "harness/dirty") != "" {
		t.Error("a dirty base left a worktree or a branch")
	}
	f.MustRun("stop", "b")
}
