//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// crashyConfig is a restart = "always" harness that crashes at once, with a
// daily run budget of max.
func crashyConfig(max int) string {
	return fmt.Sprintf(`
[harness.crashy]
cmd = "sh"
args = ["-c", "echo crashing; sleep 0.2; exit 3"]
restart = "always"
restart_delay = 0.1
enabled = true
max_runs_per_day = %d
`, max)
}

// TestScenario_ACrashLoopStopsAtItsBudgetUntilTheHoldLifts: a harness with
// restart = "always" that keeps crashing is restarted until its
// max_runs_per_day is spent; the next restart is held, not armed: the
// harness is stopped (not degraded, not failed, no retry due), shows hold
// budget, its log says the restart waits for the hold, and nothing more is
// spawned. When the hold lifts (a reload raises the budget) it starts again
// by itself, and stops again at the new budget.
func TestScenario_ACrashLoopStopsAtItsBudgetUntilTheHoldLifts(t *testing.T) {
	f := newFleet(t, crashyConfig(2))
	var row struct {
		State        string `json:"state"`
		Enabled      bool   `json:"enabled"`
		PID          int    `json:"pid"`
		RestartCount int    `json:"restart_count"`
		Hold         *struct {
			Reason string     `json:"reason"`
			Until  *time.Time `json:"until"`
			Note   string     `json:"note"`
		} `json:"hold"`
	}
	heldAt := func(n, restarts int) {
		t.Helper()
		f.WaitFor(fmt.Sprintf("crashy held after %d runs", n), 30*time.Second, func() bool {
			f.MustJSON(&row, "describe", "crashy")
			return row.State == "stopped" && row.Hold != nil && len(f.runsOf("crashy")) == n
		})
		if row.Hold.Reason != "budget" || row.Hold.Until == nil || row.PID != 0 || !row.Enabled {
			t.Fatalf("held crash loop: %+v hold %+v", row, row.Hold)
		}
		// The held exit was not counted: the restarts are the ones made
		// (since the last start).
		if row.RestartCount != restarts {
			t.Fatalf("restart_count %d after %d runs, want %d", row.RestartCount, n, restarts)
		}
		rs := f.runsOf("crashy")
		for _, r := range rs {
			if r.EndedAt == nil || r.ExitCode == nil || *r.ExitCode != 3 {
				t.Fatalf("runs: %+v", rs)
			}
		}
		logs := f.MustRun("logs", "crashy")
		if !strings.Contains(logs, "not restarted until the hold lifts") {
			t.Fatalf("the log does not say the restart is held:\n%s", logs)
		}
	}
	heldAt(2, 1)
	// Still held later: state stopped means no retry is armed; the
	// describe after a reload of the same config says the same.
	f.MustRun("reload")
	f.MustJSON(&row, "describe", "crashy")
	if row.State != "stopped" || len(f.runsOf("crashy")) != 2 {
		t.Fatalf("a held harness moved: %+v", row)
	}
	if _, stderr, code := f.Run("start", "crashy"); code == 0 || !strings.Contains(stderr, "held") {
		t.Fatalf("start of the held harness: exit %d %q", code, stderr)
	}

	// The hold lifts: it starts again by itself and runs to the new budget.
	f.WriteConfig(crashyConfig(4))
	f.MustRun("reload")
	heldAt(4, 1) // started when the hold lifted, restarted once
}
