//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// needController fails the test unless the tree limits ctrl: a fork bomb
// or an allocation loop is never started without its limit.
func needController(t *testing.T, tr *Tree, ctrl string) {
	t.Helper()
	for _, c := range tr.ControllerStates() {
		if c.Name == ctrl && c.Version == "" {
			testenv.Missing(t, "the "+ctrl+" cgroup controller (root, cgroup v2 with it delegated or a v1 hierarchy)", c.Why)
		}
	}
}

// startSh starts sh -c script in g the way supervise does.
func startSh(t *testing.T, g *Group, script string) *exec.Cmd {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD(), Setsid: true}
	if err := g.Start(c.Start); err != nil {
		t.Fatal(err)
	}
	if err := g.CloseFD(); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitCounter(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestScenario_TasksMaxStopsAForkBombAtItsLimit(t *testing.T) {
	tr := testTree(t)
	needController(t, tr, Pids)
	g, err := tr.NewRun("bomb", 1, Limits{TasksMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	c := startSh(t, g, `bomb() { bomb | bomb & }; bomb; sleep 100`)
	waitCounter(t, "pids.events max", 20*time.Second, func() bool { return g.Counters().PidsMax > 0 })
	if n, _ := procs(g.Dir()); len(n) > 64 {
		t.Fatalf("%d processes in a run limited to 64", len(n))
	}
	// No thread of the spawner stayed in the run's cgroups.
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), filepath.Base(tr.Dir())) {
			t.Fatalf("%s: a thread of the test is in its run's cgroup: %s", f, b)
		}
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitEmpty(nil); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

func TestScenario_MemoryMaxEndsTheRunByTheOOMKiller(t *testing.T) {
	tr := testTree(t)
	needController(t, tr, Memory)
	g, err := tr.NewRun("hog", 1, Limits{MemoryMax: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := startSh(t, g, `exec awk 'BEGIN { s = "x"; while (1) s = s s }'`)
	err = c.Wait()
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want SIGKILL by the OOM killer", err)
	}
	if n := g.Counters().OOMKills; n < 1 {
		t.Fatalf("oom_kill count %d after the hog was killed", n)
	}
	if err := g.WaitEmpty(nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}
