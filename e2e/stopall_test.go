//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pidsLimited makes a cgroup v1 pids group bounded to max tasks, removed in
// Cleanup once empty, and returns the file a pid is moved in by.
func pidsLimited(t *testing.T, max int) string {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/pids", fmt.Sprintf("harness-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("a pids cgroup to bound the test's processes: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for os.Remove(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(fmt.Sprint(max)), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "cgroup.procs")
}

// TestScenario_StopAllOfAThousandHarnessesIsQuick: `stop --all` of 1,000
// running harnesses answers within 3 s with every one stopped and no
// process left, in both ownership modes. The daemon and everything it
// spawns are held to 2,500 tasks (a cgroup v1 pids limit, joined before
// anything starts) so a mistake cannot turn into a fork storm.
func TestScenario_StopAllOfAThousandHarnessesIsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 processes")
	}
	const n = 1000
	for _, m := range ownershipModes {
		t.Run(m.mode, func(t *testing.T) {
			procs := pidsLimited(t, 2500)
			raiseNoFile(t, 16384)
			// The test joins the group, so the daemon starts in it and
			// puts its units' cgroups below it; it leaves before the
			// group is removed.
			if err := os.WriteFile(procs, []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := os.WriteFile("/sys/fs/cgroup/pids/cgroup.procs", []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
					t.Errorf("leave the pids group: %v", err)
				}
			})
			// Every harness sleeps for the same unique length, so /proc
			// tells its processes from anyone else's (a pid may be reused).
			tag := uniqueTag(t)
			var cfg strings.Builder
			for i := range n {
				fmt.Fprintf(&cfg, "[harness.s%04d]\ncmd = \"sleep\"\nargs = [%q]\n", i, tag)
			}
			f := newOwnershipFleet(t, m.mode, m.args, cfg.String())
			start := time.Now()
			f.MustRun("start", "--all")
			f.WaitFor("1,000 harnesses running", 180*time.Second, func() bool {
				var rows []unitInfo
				f.MustJSON(&rows, "list")
				running := 0
				for _, r := range rows {
					if r.State == "running" && r.PID != 0 {
						running++
					}
				}
				return running == n
			})
			if got := len(procsByArg(tag)[tag]); got != n {
				t.Fatalf("%d processes sleep %s, want %d", got, tag, n)
			}
			t.Logf("start --all of %d: %v", n, time.Since(start))

			cpu0 := cpuTime(t, f.Cmd.Process.Pid)
			start = time.Now()
			out := f.MustRun("stop", "--all", "--json")
			took := time.Since(start)
			cpu := cpuTime(t, f.Cmd.Process.Pid) - cpu0
			var res struct {
				Results []struct{ Name, State, Error string } `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) != n {
				t.Fatalf("stop --all: %v: %d results", err, len(res.Results))
			}
			for _, r := range res.Results {
				if r.State != "stopped" || r.Error != "" {
					t.Fatalf("stop --all: %+v", r)
				}
			}
			if left := procsByArg(tag)[tag]; len(left) > 0 {
				t.Errorf("%d processes of stopped harnesses are still there: %v", len(left), left)
			}
			// The daemon's CPU time says what load on a shared machine
			// does not: how much work the stop was.
			t.Logf("stop --all of %d (%s): %v, daemon CPU %v, load %s", n, m.mode, took, cpu, loadAvg())
			if took > 3*time.Second {
				t.Errorf("stop --all of %d took %v, want < 3 s", n, took)
			}
		})
	}
}

// cpuTime is the user+system CPU time pid has used (/proc/PID/stat fields
// 14 and 15, in clock ticks of 10 ms).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var ticks int64
	for _, v := range f[11:13] {
		var n int64
		fmt.Sscan(v, &n)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
