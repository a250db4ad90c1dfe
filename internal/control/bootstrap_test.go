package control

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/testenv"
)

func TestScenario_PortsAreUniqueInTheFleetKeptAcrossDaemonsAndGivenBackByRm(t *testing.T) {
	state := t.TempDir()
	c := &Control{opt: Options{Paths: api.Paths{StateDir: state}}, log: slog.Default()}
	a, b := c.portsFor("a", 2), c.portsFor("b", 3)
	if len(a) != 2 || len(b) != 3 {
		t.Fatalf("a %v b %v", a, b)
	}
	for _, p := range a {
		if slices.Contains(b, p) {
			t.Fatalf("port %d given to a and b", p)
		}
	}
	if again := c.portsFor("a", 2); !slices.Equal(again, a) {
		t.Fatalf("a's ports changed: %v then %v", a, again)
	}
	// Another daemon on the same state dir: the same ports; more for a
	// keeps the ones it had.
	d := &Control{opt: Options{Paths: api.Paths{StateDir: state}}, log: slog.Default()}
	if more := d.portsFor("a", 3); !slices.Equal(more[:2], a) || slices.Contains(b, more[2]) {
		t.Fatalf("after a restart a has %v, had %v (b %v)", more, a, b)
	}
	env := d.portEnv("b", 3)
	if len(env) != 2 || !strings.HasPrefix(env[0], "HARNESS_PORT=") || strings.Count(env[1], ",") != 2 ||
		!strings.HasPrefix(strings.TrimPrefix(env[1], "HARNESS_PORTS="), strings.TrimPrefix(env[0], "HARNESS_PORT=")+",") {
		t.Fatalf("env %q", env)
	}
	if d.portEnv("c", 0) != nil {
		t.Fatal("ports = 0 gives env")
	}
	// harness rm gives a's ports back: the book, read by a third daemon,
	// has b's only.
	d.releasePorts("a")
	e := &Control{opt: Options{Paths: api.Paths{StateDir: state}}, log: slog.Default()}
	e.loadPortsLocked()
	if _, ok := e.ports.byName["a"]; ok || !slices.Equal(e.ports.byName["b"], b) {
		t.Fatalf("after rm of a the book holds %v", e.ports.byName)
	}
}

func TestScenario_OnlyIgnoredFilesTheIncludeNamesAreCopiedAndNoLinkLeavesTheRepository(t *testing.T) {
	testenv.Program(t, "git")
	ctx := context.Background()
	c := &Control{log: slog.Default()}
	repo, wt, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := c.git(ctx, repo, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	put := func(rel, text string, mode os.FileMode) {
		p := filepath.Join(repo, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	put(".gitignore", ".env\nconf/local.yml\nout-link\nin-link\nbig/\n", 0o644)
	put(".worktreeinclude", ".env\nconf/*.yml\n*-link\nnotes.txt\n", 0o644)
	put(".env", "K=v\n", 0o600)
	put("conf/local.yml", "a: 1\n", 0o640)
	put("notes.txt", "untracked, not ignored\n", 0o644)
	put("big/blob", "ignored but not included\n", 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(repo, "out-link"))
	os.Symlink(".env", filepath.Join(repo, "in-link"))

	c.copyIncluded(ctx, "h", repo, wt)
	for rel, mode := range map[string]os.FileMode{".env": 0o600, "conf/local.yml": 0o640} {
		fi, err := os.Stat(filepath.Join(wt, rel))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", rel, fi, err, mode)
		}
	}
	if target, err := os.Readlink(filepath.Join(wt, "in-link")); err != nil || target != ".env" {
		t.Errorf("in-link: %q %v", target, err)
	}
	for _, rel := range []string{"notes.txt", "big/blob", "out-link"} {
		if _, err := os.Lstat(filepath.Join(wt, rel)); err == nil {
			t.Errorf("%s was copied", rel)
		}
	}
}
