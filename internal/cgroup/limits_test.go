//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
		if b, _ := os.ReadFile(f); strings.Contains(string(b), filepath.Base(tr.Dir())+"/bomb") {
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

// threadsIn lists, per thread of this process, the cgroup paths in its
// /proc/self/task/TID/cgroup that contain part.
func threadsIn(t *testing.T, part string) map[string][]string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(line, part) {
				tid := filepath.Base(filepath.Dir(f))
				out[tid] = append(out[tid], line)
			}
		}
	}
	return out
}

// TestScenario_RunsStartFromOneThreadInItsOwnLeaves: on a layout with v1
// hierarchies, runs are started by one thread of the tree's, which lives
// in SUBTREE/.spawner of each v1 hierarchy between spawns, never in a
// run's leaf and never the main thread. Each run's process starts in its
// own v1 leaves. Close ends the thread and removes its leaves.
func TestScenario_RunsStartFromOneThreadInItsOwnLeaves(t *testing.T) {
	var tr *Tree
	// Registered first, so it runs after testTree's cleanup has closed
	// the tree.
	t.Cleanup(func() {
		if tr == nil || tr.sp == nil {
			return
		}
		if in := threadsIn(t, filepath.Base(tr.Dir())); len(in) != 0 {
			t.Errorf("after Close, threads in the subtree: %v", in)
		}
		for _, h := range tr.v1 {
			if _, err := os.Stat(h.dir); err == nil {
				t.Errorf("%s left behind", h.dir)
			}
		}
		// A Start after Close is refused, not left waiting.
		if err := (&Group{v1: []v1Leaf{{dir: "x"}}, sp: tr.sp}).Start(func() error { return nil }); err == nil {
			t.Error("a Start after Close ran")
		}
	})
	tr = testTree(t)
	if len(tr.v1) == 0 {
		t.Skip("no cgroup v1 hierarchy here: runs start from the calling thread, straight into their v2 leaf")
	}
	if tr.sp == nil {
		t.Fatalf("no spawning thread: %+v", tr.ControllerStates())
	}
	base := filepath.Base(tr.Dir())
	for run := uint64(1); run <= 3; run++ {
		g, err := tr.NewRun("unit", run, Limits{TasksMax: 16})
		if err != nil {
			t.Fatal(err)
		}
		c := startSh(t, g, "sleep 100")
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.Process.Pid), "cgroup"))
		if err != nil {
			t.Fatal(err)
		}
		leaf := base + "/unit/run-" + strconv.FormatUint(run, 10)
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasPrefix(line, "0::") && strings.HasSuffix(line, "/"+leaf) {
				n++
			}
		}
		if n != len(tr.v1) {
			t.Errorf("run %d's process is in %d of its %d v1 leaves:\n%s", run, n, len(tr.v1), b)
		}
		if in := threadsIn(t, base+"/unit"); len(in) != 0 {
			t.Errorf("threads of the daemon in a run's leaves: %v", in)
		}
		spawners := threadsIn(t, base+"/"+spawnerLeaf)
		if len(spawners) != 1 {
			t.Errorf("want one thread in the spawner's leaves, got %v", spawners)
		}
		for tid, lines := range spawners {
			if tid == strconv.Itoa(os.Getpid()) || len(lines) != len(tr.v1) {
				t.Errorf("the spawning thread %s (main %d) is in %v", tid, os.Getpid(), lines)
			}
		}
		if err := g.Kill(); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		if err := g.WaitEmpty(nil); err != nil {
			t.Fatal(err)
		}
		if err := g.Remove(); err != nil {
			t.Fatal(err)
		}
	}
}
