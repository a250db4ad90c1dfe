//go:build e2e

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

// TestScenario_AOneShotJobCutByTheDaemonsDeathIsNotRunAgain: a restart =
// "no" job running when the daemon is SIGKILLed, or stopped, ends
// interrupted and the next daemon does not start it again (it would run
// as autostart, without what triggered it); one whose config says
// enabled = true starts again with each daemon that finds it cut.
func TestScenario_AOneShotJobCutByTheDaemonsDeathIsNotRunAgain(t *testing.T) {
	out := t.TempDir()
	f := newFleet(t, fmt.Sprintf(`
[harness.deploy]
cmd = "sh"
args = ["-c", "echo run >> %[1]s/deploy; exec sleep 300"]
restart = "no"

[harness.keep]
cmd = "sh"
args = ["-c", "echo run >> %[1]s/keep; exec sleep 300"]
restart = "no"
enabled = true
`, out))
	lines := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(out, name))
		return strings.Count(string(b), "run\n")
	}
	booted := func(n int) {
		f.WaitFor(fmt.Sprintf("boot %d", n), 20*time.Second, func() bool {
			return strings.Count(f.Log(), "daemon booted") >= n
		})
	}
	type run struct {
		ID      uint64 `json:"id"`
		Cause   string `json:"cause"`
		Outcome string `json:"outcome"`
	}
	runsOf := func(name string) []run {
		var rs []run
		f.MustJSON(&rs, "runs", name)
		return rs
	}
	// deployRuns runs deploy once more and waits until it runs and the
	// daemon has written down that it is enabled, as it does while a run
	// is up.
	deployRuns := func(n int) {
		f.MustRun("trigger", "deploy")
		f.WaitFor("deploy to run", 20*time.Second, func() bool { return lines("deploy") == n })
		f.WaitFor("deploy's start intent to be saved", 20*time.Second, func() bool {
			var st struct{ Enabled map[string]bool }
			b, _ := os.ReadFile(filepath.Join(f.State, "state.json"))
			return json.Unmarshal(b, &st) == nil && st.Enabled["deploy"]
		})
	}

	booted(1)
	deployRuns(1)
	f.kill()
	f.start()
	booted(2)
	deployRuns(2) // by trigger, as it should
	f.Stop()
	f.start()
	booted(3)

	if n := lines("deploy"); n != 2 {
		t.Errorf("deploy ran %d times, want 2 (once per trigger)", n)
	}
	rs := runsOf("deploy")
	if len(rs) != 2 {
		t.Fatalf("deploy runs: %+v", rs)
	}
	for _, r := range rs {
		if r.Cause == "autostart" || r.Outcome != "interrupted" {
			t.Errorf("deploy run %+v: want a trigger's, interrupted", r)
		}
	}
	if st := f.unit("deploy").State; st == "running" || st == "starting" {
		t.Errorf("deploy is %s after the restarts", st)
	}
	f.WaitFor("keep to run at each of the 3 boots", 20*time.Second, func() bool { return lines("keep") == 3 })
}
