//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// diffJSON is `harness diff --json`.
type diffJSON struct {
	Base      string     `json:"base"`
	Head      string     `json:"head"`
	BaseRef   string     `json:"base_ref"`
	Truncated bool       `json:"truncated"`
	Files     []diffFile `json:"files"`
}

type diffFile struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
	Status  string `json:"status"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary"`
	Hunks   []struct {
		OldStart int      `json:"old_start"`
		OldLines int      `json:"old_lines"`
		NewStart int      `json:"new_start"`
		NewLines int      `json:"new_lines"`
		Lines    []string `json:"lines"`
	} `json:"hunks"`
}

func (d diffJSON) file(path string) (diffFile, bool) {
	for _, f := range d.Files {
		if f.Path == path {
			return f, true
		}
	}
	return diffFile{}, false
}

// changesRepo is a temp repository on main: keep.txt, gone.txt and a
// .gitignore leaving *.log out.
func changesRepo(t *testing.T) string {
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "keep.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "gone.txt"), []byte("bye\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("*.log\n"), 0o644)
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	return repo
}

// TestScenario_DiffShowsWhatAHarnessChangedAndLeavesItsIndexAlone: a
// harness in a worktree of a temp repository commits a file, stages one,
// changes one without staging it, deletes one and leaves an untracked and
// an ignored file; `harness diff --json` shows the five changes against
// main (the ignored file left out), and the worktree's index and status
// are as they were; --stat renders like git's; an MCP client with the
// harness's own token gets the same from harness_diff; an unknown
// harness, a workdir that is no git checkout and a base that is no
// commit any more are refused saying so.
func TestScenario_DiffShowsWhatAHarnessChangedAndLeavesItsIndexAlone(t *testing.T) {
	repo := changesRepo(t)
	gitRun(t, repo, "branch", "feature")
	plain := t.TempDir()
	tokDir := t.TempDir()
	script := `git commit -q --allow-empty -m nothing; echo new > committed.txt; git add committed.txt; git commit -q -m committed;
echo staged > staged.txt; git add staged.txt; printf 'one\nTWO\nthree\n' > keep.txt; rm gone.txt;
echo untracked > untracked.txt; echo ignored > debug.log; echo $HARNESS_MCP_TOKEN > ` + filepath.Join(tokDir, "dev.token") + `; touch .done-marker.log; exec sleep 100000`
	f := newFleet(t, fmt.Sprintf(`
[harness.dev]
cmd = "sh"
args = ["-c", %q]
worktree = { repo = %q, base = "main" }
env = { GIT_AUTHOR_NAME = "a", GIT_AUTHOR_EMAIL = "a@e", GIT_COMMITTER_NAME = "a", GIT_COMMITTER_EMAIL = "a@e" }

[harness.old]
cmd = "sleep"
args = ["100000"]
worktree = { repo = %q, base = "feature" }

[harness.plain]
cmd = "sleep"
args = ["100000"]
workdir = %q
`, script, repo, repo, plain))
	f.MustRun("start", "dev", "old")
	wt := f.worktree("dev")
	f.WaitFor("the harness's changes", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(wt.Path, ".done-marker.log"))
		return err == nil
	})
	status := func() string { return gitRun(t, wt.Path, "status", "--porcelain=v2", "--untracked-files=all") }
	index := filepath.Join(repo, ".git", "worktrees", "dev", "index")
	statusBefore := status()
	indexBefore, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}

	var d diffJSON
	f.MustJSON(&d, "diff", "dev")
	want := map[string]string{"committed.txt": "added", "staged.txt": "added", "keep.txt": "modified", "gone.txt": "deleted", "untracked.txt": "added"}
	for p, st := range want {
		if got, ok := d.file(p); !ok || got.Status != st {
			t.Errorf("%s: %+v (found %v), want status %s", p, got, ok, st)
		}
	}
	if len(d.Files) != len(want) {
		t.Errorf("%d files, want %d: %+v", len(d.Files), len(want), d.Files)
	}
	if _, ok := d.file("debug.log"); ok {
		t.Errorf("the ignored debug.log is in the diff")
	}
	if k, _ := d.file("keep.txt"); k.Added != 1 || k.Deleted != 1 || len(k.Hunks) != 1 ||
		strings.Join(k.Hunks[0].Lines, "|") != " one|-two|+TWO| three" || k.Hunks[0].OldStart != 1 || k.Hunks[0].NewLines != 3 {
		t.Errorf("keep.txt: %+v", k)
	}
	if u, _ := d.file("untracked.txt"); u.Added != 1 || len(u.Hunks) != 1 || u.Hunks[0].Lines[0] != "+untracked" {
		t.Errorf("untracked.txt: %+v", u)
	}
	if d.Base != gitRun(t, repo, "rev-parse", "main") || d.Head != gitRun(t, wt.Path, "rev-parse", "HEAD") || d.BaseRef != "main" {
		t.Errorf("base %s (%s) head %s", d.Base, d.BaseRef, d.Head)
	}
	if s := status(); s != statusBefore {
		t.Errorf("the worktree's status changed:\nbefore %s\nafter %s", statusBefore, s)
	}
	if b, _ := os.ReadFile(index); string(b) != string(indexBefore) {
		t.Errorf("the worktree's index file changed")
	}

	stat := f.MustRun("diff", "dev", "--stat")
	for _, w := range []string{" keep.txt      | 2 +-", " 5 files changed, 4 insertions(+), 2 deletions(-)"} {
		if !strings.Contains(stat, w) {
			t.Errorf("--stat lacks %q:\n%s", w, stat)
		}
	}
	if patch := f.MustRun("diff", "dev"); !strings.Contains(patch, "+++ b/untracked.txt") || !strings.Contains(patch, "-two\n+TWO") {
		t.Errorf("the patch:\n%s", patch)
	}

	// The harness's own MCP session reads it too (read class).
	s := f.mcpSession(token(t, filepath.Join(tokDir, "dev.token")), false, nil)
	res := callTool(t, s, "harness_diff", map[string]any{"name": "dev"})
	if res.IsError {
		t.Fatalf("harness_diff: %+v", res.Content)
	}
	var viaMCP diffJSON
	resultJSON(t, res, &viaMCP)
	if !reflect.DeepEqual(viaMCP, d) {
		t.Errorf("harness_diff differs from the CLI:\n%+v\n%+v", viaMCP, d)
	}

	// Bad input, said clearly.
	for _, c := range []struct{ name, code, says string }{
		{"nope", "unknown_harness", "nope"},
		{"plain", "invalid_argument", "not a git checkout"},
		{"old", "invalid_argument", `base "feature" is not a commit`},
	} {
		if c.name == "old" {
			gitRun(t, repo, "branch", "-D", "feature")
		}
		out, _, code := f.Run("diff", c.name, "--json")
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal([]byte(out), &e)
		if code == 0 || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("diff %s: exit %d, %s", c.name, code, out)
		}
	}
}
