package kaudit_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/kaudit"
	"github.com/harness-dev/harness/internal/kaudit/kaudittest"
	"github.com/harness-dev/harness/internal/sandbox" // its init makes this test binary the shim
	"github.com/harness-dev/harness/internal/testenv"
)

// statusMode makes the test binary print a new Watcher's status and exit
// (run as another user).
const statusMode = "KAUDIT_TEST_PRINT_STATUS"

func TestMain(m *testing.M) {
	if os.Getenv(statusMode) == "1" {
		w := kaudit.Start(quiet, kaudit.Options{})
		fmt.Print(w.Status().Why)
		w.Close()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// collected gathers a run's denials.
type collected struct {
	mu      sync.Mutex
	ds      []kaudit.Denial
	changed chan struct{} // closed and replaced at each denial
}

func newCollected() *collected { return &collected{changed: make(chan struct{})} }

func (c *collected) on(d kaudit.Denial) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ds = append(c.ds, d)
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait waits until n denials came, woken by each.
func (c *collected) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got, wake := len(c.ds), c.changed
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("%d refusals told within 10 s, want %d", got, n)
		}
	}
}

func (c *collected) paths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []string
	for _, d := range c.ds {
		ps = append(ps, d.Path)
	}
	return ps
}

// boxed runs script in the real shim (this binary as `sandbox-exec`)
// with ~/.ssh denied and work as its workdir, and returns its pid
// watched by w and when it was spawned.
func boxed(t *testing.T, w *kaudit.Watcher, home, work, script string, on func(kaudit.Denial)) {
	t.Helper()
	since := time.Now()
	cmd := exec.Command(os.Args[0], sandbox.Subcommand, `{"fs":true,"deny":["~/.ssh"]}`, "/bin/sh", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if on != nil {
		stop := w.Watch(cmd.Process.Pid, since, on)
		t.Cleanup(stop)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the boxed script: %v", err)
	}
}

func needLandlock7(t *testing.T) {
	t.Helper()
	if abi, _ := sandbox.ABI(); abi < 7 {
		testenv.Missing(t, "Landlock ABI 7", "it logs denials to audit after an exec")
	}
}

// waitFor polls the watcher's status, which comes with no event.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A boxed program reads a denied key and writes outside its workdir: the
// run that watches its pid is told both paths, and only those (the same
// refusals of another boxed program before it go to no run).
func TestWatcher_ARunIsToldItsFileRefusals(t *testing.T) {
	needLandlock7(t)
	kaudittest.Set(t, true)
	w := kaudit.Start(quiet, kaudit.Options{})
	defer w.Close()
	if s := w.Status(); !s.Counting || s.Why != "" {
		t.Fatalf("status with audit on: %+v", s)
	}
	dir := t.TempDir()
	home, work, outside := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "outside.txt")
	for _, d := range []string{filepath.Join(home, ".ssh"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	for _, f := range []string{key, outside} {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := "cat ~/.ssh/id_ed25519 >/dev/null 2>&1; echo y 2>/dev/null >> " + outside + "; true"
	boxed(t, w, home, work, script, nil) // a sandboxed program of no run: told to nobody
	mine := newCollected()
	boxed(t, w, home, work, script, mine.on)
	exited := time.Now()
	mine.wait(t, 2)
	t.Logf("both refusals told %v after the boxed program exited", time.Since(exited))
	if got := mine.paths(); !slices.Equal(got, []string{key, outside}) {
		t.Fatalf("told %q, want %q", got, []string{key, outside})
	}
	if mine.ds[0].Blockers[0] != "fs.read_file" || mine.ds[1].Blockers[0] != "fs.write_file" {
		t.Errorf("blockers: %+v", mine.ds)
	}
}

// With audit off the watcher says why nothing is counted, and how an
// operator turns it on.
func TestWatcher_AuditOffSaysWhyNothingIsCounted(t *testing.T) {
	kaudittest.Set(t, false)
	w := kaudit.Start(quiet, kaudit.Options{})
	defer w.Close()
	if s := w.Status(); s.Counting || s.Why != kaudit.WhyAuditOff {
		t.Fatalf("status with audit off: %+v", s)
	}
}

// Turning audit off while the daemon runs is seen at once (its config
// change record), turning it on at the next poll.
func TestWatcher_FollowsAuditBeingTurnedOnAndOff(t *testing.T) {
	kaudittest.Set(t, true)
	w := kaudit.Start(quiet, kaudit.Options{Poll: 50 * time.Millisecond})
	defer w.Close()
	if s := w.Status(); !s.Counting {
		t.Fatalf("status with audit on: %+v", s)
	}
	kaudittest.Switch(t, false)
	waitFor(t, "the off status", func() bool { return w.Status().Why == kaudit.WhyAuditOff })
	kaudittest.Switch(t, true)
	waitFor(t, "the on status", func() bool { return w.Status().Counting })
}

// A daemon that is not root cannot read audit's records: it says so, and
// what it would take.
func TestWatcher_ADaemonWithoutRootSaysWhyNothingIsCounted(t *testing.T) {
	if os.Getuid() != 0 {
		w := kaudit.Start(quiet, kaudit.Options{})
		defer w.Close()
		if s := w.Status(); s.Counting || s.Why != kaudit.WhyUnreadable {
			t.Fatalf("status as uid %d: %+v", os.Getuid(), s)
		}
		return
	}
	// As root: this binary, copied where nobody may run it, run as nobody.
	got := statusOfChild(t, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
	if got != kaudit.WhyUnreadable {
		t.Fatalf("status as nobody: %q, want %q", got, kaudit.WhyUnreadable)
	}
}

// A daemon in a container's pid or network namespace would count
// nothing (the records name the system's pids, and reach only the
// system's network namespace): it says so rather than a false 0.
func TestWatcher_ADaemonInAContainersNamespaceSaysWhyNothingIsCounted(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root", "the test starts its child in new namespaces")
	}
	for _, c := range []struct {
		flags uintptr
		want  string
	}{{syscall.CLONE_NEWPID, kaudit.WhyPidNamespace}, {syscall.CLONE_NEWNET, kaudit.WhyNetNamespace}} {
		if got := statusOfChild(t, &syscall.SysProcAttr{Cloneflags: c.flags}); got != c.want {
			t.Errorf("status in a new namespace (%#x): %q, want %q", c.flags, got, c.want)
		}
	}
}

// statusOfChild is the status a Watcher started by a copy of this binary
// with attrs says.
func statusOfChild(t *testing.T, attrs *syscall.SysProcAttr) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kaudit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "kaudit.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), statusMode+"=1")
	cmd.SysProcAttr = attrs
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v: %s", err, out)
	}
	return string(out)
}
