//go:build linux

package cgroup

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/proctest"

	"github.com/harness-dev/harness/internal/testenv"
)

func TestMain(m *testing.M) {
	proctest.Main(nil) // sleep, stubborn, escape: the shared hostile children
	goleak.VerifyTestMain(m)
}

// testTree creates a subtree of a unique name in this process's cgroup
// and removes it, and whatever it still holds, when the test ends.
// Tests run as root on a cgroup v2 kernel (CI does); anything else skips
// them, or fails them under HARNESS_CI.
func testTree(t *testing.T) *Tree {
	t.Helper()
	loc, err := Locate()
	if err != nil {
		testenv.Missing(t, "a cgroup v2 hierarchy", err.Error())
	}
	var b [6]byte
	rand.Read(b[:])
	tr, err := Create(loc, "harness-test-"+hex.EncodeToString(b[:]))
	if err != nil {
		testenv.Missing(t, "a writable cgroup v2 hierarchy (root, or Delegate=yes)", err.Error())
	}
	t.Cleanup(func() {
		if _, err := End(tr.Dir(), time.Second); err != nil {
			t.Errorf("end test subtree: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("close test subtree: %v", err)
		}
		if _, err := os.Stat(tr.Dir()); err == nil {
			t.Errorf("test subtree %s left behind", tr.Dir())
		}
	})
	return tr
}

// startIn starts a helper straight into g and returns it and the first
// line it printed.
func startIn(t *testing.T, g *Group, mode string) (*exec.Cmd, string) {
	t.Helper()
	c := proctest.Command(mode)
	c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD(), Setsid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper %s: %q %v", mode, line, err)
	}
	return c, strings.TrimSpace(line)
}

func alive(pid int) bool { return proctest.Alive(pid) }

func TestRunLeaf_HoldsEscapedChildren_KillEmptiesIt(t *testing.T) {
	tr := testTree(t)
	g, err := tr.NewRun("app/mcp.git", 7, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tr.Dir(), "app%2Fmcp.git", "run-7"); g.Dir() != want {
		t.Fatalf("leaf %s, want %s", g.Dir(), want)
	}
	main, line := startIn(t, g, "escape")
	escaped, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("escape helper printed %q", line)
	}
	if err := g.CloseFD(); err != nil {
		t.Fatal(err)
	}
	// Placed before it ran: the main process and its setsid'd, env-less
	// child are both members.
	for _, pid := range []int{main.Process.Pid, escaped} {
		if !inDir(pid, tr.mount, g.Dir()) {
			t.Fatalf("pid %d is not in %s", pid, g.Dir())
		}
	}

	// SIGTERM reaches every member; the stubborn child stays.
	n, err := g.Signal(syscall.SIGTERM)
	if err != nil || n != 2 {
		t.Fatalf("Signal = %d, %v; want 2 processes", n, err)
	}
	main.Wait()
	if !alive(escaped) {
		t.Fatal("the SIGTERM-ignoring child died; the test proves nothing")
	}
	if busy, err := g.Populated(); err != nil || !busy {
		t.Fatalf("Populated = %v, %v with a member left", busy, err)
	}

	empty := make(chan error, 1)
	go func() { empty <- g.WaitEmpty(nil) }()
	select {
	case err := <-empty:
		t.Fatalf("WaitEmpty returned %v while a process remains", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-empty:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitEmpty did not return after cgroup.kill")
	}
	if alive(escaped) {
		t.Fatalf("escaped child %d survived cgroup.kill", escaped)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir()); err == nil {
		t.Fatal("leaf not removed")
	}
}

func TestWaitEmpty_Cancelled(t *testing.T) {
	tr := testTree(t)
	g, err := tr.NewRun("u", 1, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, g, "sleep")
	done := make(chan struct{})
	close(done)
	if err := g.WaitEmpty(done); err != ErrWaitCancelled {
		t.Fatalf("WaitEmpty = %v, want ErrWaitCancelled", err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitEmpty(nil); err != nil {
		t.Fatal(err)
	}
}

func TestNewRun_RefusesAPopulatedLeaf(t *testing.T) {
	tr := testTree(t)
	g, err := tr.NewRun("u", 3, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, g, "sleep")
	if _, err := tr.NewRun("u", 3, Limits{}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("NewRun on a populated leaf: %v", err)
	}
}

// End is what a daemon runs at start on its crashed predecessor's subtree.
func TestEnd_EndsEverythingBelowAndRemovesIt(t *testing.T) {
	tr := testTree(t)
	var pids []int
	for i, mode := range []string{"sleep", "escape"} {
		g, err := tr.NewRun("unit", uint64(i+1), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		c, line := startIn(t, g, mode)
		pids = append(pids, c.Process.Pid)
		if mode == "escape" {
			p, _ := strconv.Atoi(line)
			pids = append(pids, p)
		}
	}
	n, err := End(tr.Dir(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("End signalled %d processes, want 3", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d survived End", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := os.Stat(tr.Dir()); err == nil {
		t.Fatal("End left the subtree")
	}
	if n, err := End(tr.Dir(), time.Second); n != 0 || err != nil {
		t.Fatalf("End of a missing subtree = %d, %v", n, err)
	}
}
