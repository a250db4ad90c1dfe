//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// controllers is daemon-info's ownership.controllers.
type controllerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Why     string `json:"why"`
}

// needLimit fails the test unless the daemon limits runs with ctrl: a
// fork bomb or a memory hog never runs without its limit.
func (f *fleet) needLimit(ctrl string) {
	f.T.Helper()
	var info struct {
		Ownership struct {
			Mode        string           `json:"mode"`
			Controllers []controllerInfo `json:"controllers"`
		} `json:"ownership"`
	}
	f.MustJSON(&info, "daemon-info")
	for _, c := range info.Ownership.Controllers {
		if c.Name == ctrl {
			if c.Version == "" {
				f.T.Fatalf("the daemon has no %s controller (%s); this test needs root and cgroup v2 with it delegated, or its v1 hierarchy", ctrl, c.Why)
			}
			return
		}
	}
	f.T.Fatalf("daemon-info lists no %s controller (mode %s): %+v", ctrl, info.Ownership.Mode, info.Ownership.Controllers)
}

// inUnitCgroup lists the processes whose cgroups (v2 or v1) are those of
// unit in the daemon's subtree.
func (f *fleet) inUnitCgroup(unit string) []int {
	sub := "/" + filepath.Base(f.ownership.Cgroup) + "/" + unit + "/"
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err == nil && strings.Contains(string(b), sub) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// waitCounted waits until describe shows unit's pids.max hits. One CI run
// in twelve timed out here although the kernel had logged "fork rejected
// by pids controller" for the run's leaf within the second (not seen
// here in hundreds of runs): a timeout says what each side read.
func (f *fleet) waitCounted(unit string, d time.Duration) {
	f.T.Helper()
	f.CLI().WaitForExplained("describe to show "+unit+"'s pids.max hits", d, func() bool { return f.resources(unit).PidsMax > 0 }, func() string {
		out, _, _ := f.Run("describe", unit, "--json")
		var files []string
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + filepath.Base(f.ownership.Cgroup) + "/" + unit + "/*")
		for _, dir := range dirs {
			for _, name := range []string{"pids.events", "pids.current", "pids.max"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					files = append(files, fmt.Sprintf("%s/%s: %s", dir, name, strings.TrimSpace(string(b))))
				}
			}
		}
		return fmt.Sprintf("%d processes in the unit's cgroups; the leaves read:\n%s\ndescribe:\n%s",
			len(f.inUnitCgroup(unit)), strings.Join(files, "\n"), out)
	})
}

type resourceEvents struct {
	PidsMax  int64 `json:"pids_max"`
	OOMKills int64 `json:"oom_kills"`
}

func (f *fleet) resources(name string) resourceEvents {
	f.T.Helper()
	var d struct {
		Resources *resourceEvents `json:"resources"`
	}
	f.MustJSON(&d, "describe", name)
	if d.Resources == nil {
		return resourceEvents{}
	}
	return *d.Resources
}

// TestScenario_AForkBombStopsAtTasksMaxWhileTheFleetGoesOn: a harness running a fork bomb under tasks_max = 256
// reaches its limit (describe shows pids.events max) while `harness
// list`, a second harness's start and a shell spawned here all work; stop
// ends the run cleanly and leaves nothing.
func TestScenario_AForkBombStopsAtTasksMaxWhileTheFleetGoesOn(t *testing.T) {
	f := newFleet(t, `
[harness.bomb]
cmd = "sh"
args = ["-c", "bomb() { bomb | bomb & }; bomb; exec sleep 100000"]
tasks_max = 256
restart = "no"

[harness.other]
cmd = "sleep"
args = ["100000"]
`)
	f.needLimit("pids")
	f.MustRun("start", "bomb")
	// A deadline, not a speed: at load 14 on two cores the bomb took 24 s
	// to reach its limit (the kernel's "fork rejected" line), and the
	// next look came past a 30 s deadline.
	f.waitCounted("bomb", 90*time.Second)
	if n := len(f.inUnitCgroup("bomb")); n > 256 {
		t.Fatalf("%d processes in a run limited to 256", n)
	}
	// The daemon is never inside a unit's cgroup: none of its threads.
	var info struct {
		PID int `json:"pid"`
	}
	f.MustJSON(&info, "daemon-info")
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/cgroup", info.PID))
	for _, tf := range tasks {
		if b, _ := os.ReadFile(tf); strings.Contains(string(b), "/bomb/") {
			t.Fatalf("daemon thread %s is in the bomb's cgroup: %s", tf, b)
		}
	}
	if len(tasks) == 0 {
		t.Fatalf("no threads of daemon pid %d", info.PID)
	}
	// At its limit, everything else goes on.
	var us []unitInfo
	f.MustJSON(&us, "list")
	f.MustRun("start", "other")
	f.waitState("other", "running")
	out, err := exec.Command("sh", "-c", "echo shell-ok").Output()
	if err != nil || strings.TrimSpace(string(out)) != "shell-ok" {
		t.Fatalf("a shell spawned beside the bomb: %q %v", out, err)
	}
	// The counter only grows, yet in two CI runs of nine one describe here
	// read 0 (not seen in hundreds of reads on a quiet machine): a read
	// that comes back 0 is logged whole and the counter must show again
	// within seconds.
	if f.resources("bomb").PidsMax == 0 {
		out, _, _ := f.Run("describe", "bomb", "--json")
		t.Logf("describe read pids_max 0 after it was counted:\n%s", out)
		f.waitCounted("bomb", 10*time.Second)
	}
	f.MustRun("stop", "bomb")
	f.waitState("bomb", "stopped")
	f.WaitFor("the bomb's processes to be gone", 10*time.Second, func() bool { return len(f.inUnitCgroup("bomb")) == 0 })
	f.MustRun("stop", "other")
}

// TestScenario_MemoryMaxEndsARunWithCauseOOMAndThePolicyRestartsIt: a
// harness allocating past memory_max is ended by the OOM killer; runs, the
// log and describe say oom; restart = "on-failure" starts it again.
func TestScenario_MemoryMaxEndsARunWithCauseOOMAndThePolicyRestartsIt(t *testing.T) {
	f := newFleet(t, `
[harness.hog]
cmd = "sh"
args = ["-c", "echo allocating; exec awk 'BEGIN { s = \"x\"; while (1) s = s s }'"]
memory_max = "32M"
restart = "on-failure"
restart_delay = 0.5
`)
	f.needLimit("memory")
	f.MustRun("start", "hog")
	type run struct {
		ID       uint64  `json:"id"`
		Cause    string  `json:"cause"`
		Signal   string  `json:"signal"`
		EndCause string  `json:"end_cause"`
		EndedAt  *string `json:"ended_at"`
	}
	var rs []run
	f.WaitFor("two runs ended by the OOM killer", 30*time.Second, func() bool {
		f.MustJSON(&rs, "runs", "hog")
		oom := 0
		for _, r := range rs {
			if r.EndCause == "oom" {
				oom++
			}
		}
		return oom >= 2
	})
	f.MustRun("stop", "hog")
	f.MustJSON(&rs, "runs", "hog")
	first := rs[0]
	for _, r := range rs {
		if r.ID < first.ID {
			first = r
		}
	}
	if first.EndCause != "oom" || first.Signal != "SIGKILL" {
		t.Errorf("first run: %+v", first)
	}
	restarted := false
	for _, r := range rs {
		restarted = restarted || r.Cause == "restart"
	}
	if !restarted {
		t.Errorf("no run with cause restart: %+v", rs)
	}
	logs := f.MustRun("logs", "hog")
	if !strings.Contains(logs, "oom: killed by SIGKILL") {
		t.Errorf("the log does not say oom:\n%s", logs)
	}
}
