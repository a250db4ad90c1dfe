package gitdiff

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/testenv"
)

// repo is a temp git repository with one commit on main.
func repo(t *testing.T) string {
	t.Helper()
	testenv.Program(t, "git")
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "keep.txt", "one\ntwo\nthree\n")
	write(t, dir, "gone.txt", "to be deleted\n")
	write(t, dir, "moved.txt", strings.Repeat("a line that moves with its file\n", 20))
	write(t, dir, ".gitignore", "*.log\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "start")
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func byPath(d api.Diff) map[string]api.DiffFile {
	m := map[string]api.DiffFile{}
	for _, f := range d.Files {
		m[f.Path] = f
	}
	return m
}

func TestScenario_DiffShowsEveryKindOfChangeAndLeavesTheIndexAlone(t *testing.T) {
	dir := repo(t)
	run(t, dir, "switch", "-q", "-c", "work")
	// committed on the branch
	write(t, dir, "committed.txt", "made in a commit\n")
	run(t, dir, "add", "committed.txt")
	run(t, dir, "commit", "-q", "-m", "work")
	// main moves on after the branch: its change is no part of the diff
	run(t, dir, "switch", "-q", "main")
	write(t, dir, "onmain.txt", "main only\n")
	run(t, dir, "add", "onmain.txt")
	run(t, dir, "commit", "-q", "-m", "main moves")
	run(t, dir, "switch", "-q", "work")
	// staged
	write(t, dir, "staged.txt", "staged\n")
	run(t, dir, "add", "staged.txt")
	// unstaged change of a tracked file, a deletion and a rename
	write(t, dir, "keep.txt", "one\nTWO\nthree\nfour\n")
	run(t, dir, "rm", "-q", "gone.txt")
	run(t, dir, "mv", "moved.txt", "renamed.txt")
	// untracked, ignored, binary
	write(t, dir, "new/untracked.txt", "nobody added me\n")
	write(t, dir, "debug.log", "ignored\n")
	write(t, dir, "blob.bin", "\x00\x01\x02binary\x00")

	before := run(t, dir, "status", "--porcelain=v2")
	idx := filepath.Join(dir, ".git", "index")
	idxBefore, _ := os.ReadFile(idx)

	d, err := Compute(context.Background(), dir, "main", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if after := run(t, dir, "status", "--porcelain=v2"); after != before {
		t.Errorf("status changed:\nbefore %s\nafter %s", before, after)
	}
	if idxAfter, _ := os.ReadFile(idx); !bytes.Equal(idxBefore, idxAfter) {
		t.Errorf("the index file changed")
	}
	files := byPath(d)
	want := map[string]string{
		"committed.txt": api.DiffAdded, "staged.txt": api.DiffAdded, "keep.txt": api.DiffModified,
		"gone.txt": api.DiffDeleted, "renamed.txt": api.DiffRenamed, "new/untracked.txt": api.DiffAdded,
		"blob.bin": api.DiffAdded,
	}
	for p, st := range want {
		f, ok := files[p]
		if !ok {
			t.Errorf("%s missing from %+v", p, d.Files)
			continue
		}
		if f.Status != st {
			t.Errorf("%s: status %s, want %s", p, f.Status, st)
		}
	}
	for _, p := range []string{"debug.log", "onmain.txt", "moved.txt"} {
		if _, ok := files[p]; ok {
			t.Errorf("%s is in the diff", p)
		}
	}
	if len(d.Files) != len(want) {
		t.Errorf("%d files, want %d: %+v", len(d.Files), len(want), d.Files)
	}
	if f := files["renamed.txt"]; f.OldPath != "moved.txt" {
		t.Errorf("rename from %q", f.OldPath)
	}
	if f := files["blob.bin"]; !f.Binary || len(f.Hunks) != 0 {
		t.Errorf("blob.bin: binary %v, %d hunks", f.Binary, len(f.Hunks))
	}
	k := files["keep.txt"]
	if k.Added != 2 || k.Deleted != 1 || len(k.Hunks) != 1 {
		t.Fatalf("keep.txt: +%d -%d, %d hunks", k.Added, k.Deleted, len(k.Hunks))
	}
	h := k.Hunks[0]
	if h.OldStart != 1 || h.OldLines != 3 || h.NewStart != 1 || h.NewLines != 4 {
		t.Errorf("hunk %+v", h)
	}
	if got := strings.Join(h.Lines, "|"); got != " one|-two|+TWO| three|+four" {
		t.Errorf("hunk lines %q", got)
	}
	u := files["new/untracked.txt"]
	if u.Added != 1 || len(u.Hunks) != 1 || u.Hunks[0].Lines[0] != "+nobody added me" {
		t.Errorf("untracked: %+v", u)
	}
	if d.Base != run(t, dir, "merge-base", "main", "work") || d.Head != run(t, dir, "rev-parse", "HEAD") {
		t.Errorf("base %s head %s", d.Base, d.Head)
	}
	if s := d.Stat(); s.Files != 7 {
		t.Errorf("stat %+v", s)
	}
}

func TestScenario_StatLeavesHunksOut(t *testing.T) {
	dir := repo(t)
	write(t, dir, "keep.txt", "changed\n")
	d, err := Compute(context.Background(), dir, "", Options{Stat: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Added != 1 || d.Files[0].Deleted != 3 || len(d.Files[0].Hunks) != 0 {
		t.Errorf("%+v", d.Files)
	}
}

func TestScenario_AHugeDiffIsCutAndSaysSo(t *testing.T) {
	dir := repo(t)
	write(t, dir, "a.txt", strings.Repeat("a\n", 5000))
	write(t, dir, "b.txt", strings.Repeat("b\n", 5000))
	d, err := Compute(context.Background(), dir, "HEAD", Options{MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated || len(d.Files) != 2 {
		t.Fatalf("truncated %v, %d files", d.Truncated, len(d.Files))
	}
	if d.Files[1].Added != 5000 || len(d.Files[1].Hunks) != 0 {
		t.Errorf("the file past the cut: +%d, %d hunks", d.Files[1].Added, len(d.Files[1].Hunks))
	}
}

func TestScenario_BadCheckoutsAndBasesAreNamed(t *testing.T) {
	testenv.Program(t, "git")
	plain := t.TempDir()
	if _, err := Compute(context.Background(), plain, "", Options{}); errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), "not a git checkout") {
		t.Errorf("plain dir: %v", err)
	}
	dir := repo(t)
	if _, err := Compute(context.Background(), dir, "no-such-branch", Options{}); errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), `"no-such-branch"`) {
		t.Errorf("bad base: %v", err)
	}
}

func TestParseComment(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		path string
		line int
	}{
		{"main.go:12: use a constant", true, "main.go", 12},
		{"dir/x.go:3:tighter", true, "dir/x.go", 3},
		{"main.go: no line", false, "", 0},
		{"main.go:0: zero", false, "", 0},
		{"../etc/passwd:1: out", false, "", 0},
		{"/abs/x.go:1: abs", false, "", 0},
		{"x.go:1:   ", false, "", 0},
		{"just text", false, "", 0},
	} {
		p, l, _, err := ParseComment(c.in)
		if (err == nil) != c.ok || p != c.path || l != c.line {
			t.Errorf("%q: %q %d %v", c.in, p, l, err)
		}
	}
}
