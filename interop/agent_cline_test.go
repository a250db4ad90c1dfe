//go:build interop && linux

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

var clineSpec = agentSpec{"cline", "cline", "cline", nil, "Act (Tab)"}

// TestAgent_ClinesHubDaemonEndsWithItsHarness: Cline starts a detached
// `cline --cline-hub-daemon` (a session of its own) that outlives its
// TUI. In cgroup mode and in the fallback (process tracking) alike, no
// process of the harness is left once `harness stop` answers, nor once
// the daemon has stopped with the harness running.
func TestAgent_ClinesHubDaemonEndsWithItsHarness(t *testing.T) {
	for _, m := range []struct {
		mode string
		args []string
	}{{"cgroup", nil}, {"fallback", []string{"--cgroup=off"}}} {
		t.Run(m.mode, func(t *testing.T) {
			t.Parallel()
			rf := newRunFleet(t, clineSpec, "approval = \"ask\"\nmcp_wire = false\n", m.args...)
			var info api.DaemonInfo
			rf.MustJSON(&info, "daemon-info")
			if info.Ownership.Mode != m.mode {
				t.Fatalf("ownership %+v, want mode %s (cgroup mode needs root on cgroup v2)", info.Ownership, m.mode)
			}
			for _, step := range []string{"harness stop", "daemon stop"} {
				rf.MustRun("start", "a")
				hub := waitHub(t, rf)
				t.Logf("%s: the hub daemon runs as %v", step, hub)
				if step == "harness stop" {
					rf.MustRun("stop", "a")
				} else {
					rf.Stop()
				}
				// stop answers once the harness's tree is gone; a daemon's
				// exit once every unit is.
				if left := procsOfHome(rf.home); len(left) > 0 {
					t.Fatalf("after %s: processes of the harness still run:\n%s", step, strings.Join(left, "\n"))
				}
			}
		})
	}
}

// waitHub waits for the harness's Cline to start its hub daemon and
// returns its pids.
func waitHub(t *testing.T, rf *runFleet) []string {
	t.Helper()
	var hub []string
	rf.WaitFor("cline's hub daemon", 90*time.Second, func() bool {
		hub = hub[:0]
		for _, p := range procsOfHome(rf.home) {
			if strings.Contains(p, "--cline-hub-daemon") {
				hub = append(hub, p)
			}
		}
		return len(hub) > 0
	})
	return hub
}

// procsOfHome lists the live processes (not zombies) whose environment
// has HOME=home, as "PID: CMDLINE".
func procsOfHome(home string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if !strings.Contains("\x00"+string(environ), "\x00HOME="+home+"\x00") {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(stat), ") Z ") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}
