package supervise

import (
	"sync/atomic"
	"testing"
)

// TestScenario_AHeldRestartIsNeitherArmedNorCounted: a crash-looping
// restart = "always" unit is restarted while HoldRestart answers nothing;
// once it answers a hold, the next exit arms no retry and counts nothing:
// the unit is stopped and stays enabled (whoever lifts the hold starts
// it), it never becomes degraded or failed, and the log says why.
func TestScenario_AHeldRestartIsNeitherArmedNorCounted(t *testing.T) {
	cfg := helperCfg("crashy", "exit", map[string]string{"HELPER_CODE": "1"})
	cfg.Restart = RestartAlways
	var exits atomic.Int32
	e := newEnv(t, cfg, crashLimits, func(d *Deps) {
		d.HoldRestart = func() string {
			// Two exits restart; the third is held (a budget of 3 runs).
			if exits.Add(1) >= 3 {
				return "crashy is held: budget"
			}
			return ""
		}
	})
	e.start()
	e.waitFor("held after three runs", func() bool {
		st := e.u.Status()
		return st.State == StateStopped && exits.Load() >= 3
	})
	st := e.u.Status()
	if !st.Enabled || st.RestartCount != 2 || !st.NextRetry.IsZero() || st.PID != 0 {
		t.Fatalf("held status %+v", st)
	}
	if got := len(e.runs.List("crashy", 0)); got != 3 {
		t.Fatalf("%d runs, want 3", got)
	}
	for _, ev := range e.rec.all() {
		if ev.Kind == EventFlapping || ev.State == string(StateFailed) || ev.State == string(StateDegraded) {
			t.Fatalf("a held restart counted as failing: %+v", ev)
		}
	}
	if !e.logHas("crashy is held: budget: not restarted until the hold lifts") {
		t.Fatal("the log does not say the restart is held")
	}
}
