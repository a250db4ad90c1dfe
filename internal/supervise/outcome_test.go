package supervise

import (
	"context"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_TimeoutStopsTheRunAsTimedOut: a run past its timeout is
// stopped through the normal stop (SIGTERM to the tree), recorded as
// timed_out with the timeout named, and not restarted even under
// on-failure.
func TestScenario_TimeoutStopsTheRunAsTimedOut(t *testing.T) {
	cfg := helperCfg("job", "sleep", nil)
	cfg.Restart = RestartOnFailure
	cfg.Timeout = 300 * time.Millisecond
	e := newEnv(t, cfg)
	e.start()
	run := e.u.Status().RunID
	e.waitState(StateStopped)
	r, ok := e.runs.Get(run)
	if !ok || !r.Ended() || r.Outcome != api.RunTimedOut || r.Note != "timed out after 300ms" {
		t.Fatalf("run %+v", r)
	}
	if st := e.u.Status(); st.Enabled || st.RunID != run || st.RestartCount != 0 {
		t.Fatalf("after the timeout: %+v", st)
	}
	if !e.logHas("timed out after 300ms: stopping") {
		t.Fatal("no log entry says why the run stopped")
	}
}

// TestScenario_OutcomesOfExitsAndStops: exit 0 is ok, non-zero failed, a
// stop interrupted, EndRun's own outcome stands.
func TestScenario_OutcomesOfExitsAndStops(t *testing.T) {
	outcome := func(e *env, run uint64) api.RunOutcome {
		e.t.Helper()
		e.waitFor("run ended", func() bool { r, _ := e.runs.Get(run); return r.Ended() })
		r, _ := e.runs.Get(run)
		return r.Outcome
	}
	ok := newEnv(t, helperCfg("ok", "exit", map[string]string{"HELPER_CODE": "0"}))
	ok.start()
	if got := outcome(ok, ok.u.Status().RunID); got != api.RunOK {
		t.Errorf("exit 0: %s", got)
	}
	bad := newEnv(t, helperCfg("bad", "exit", map[string]string{"HELPER_CODE": "4"}))
	bad.start()
	if got := outcome(bad, bad.u.Status().RunID); got != api.RunFailed {
		t.Errorf("exit 4: %s", got)
	}
	stopped := newEnv(t, helperCfg("stopped", "sleep", nil))
	stopped.start()
	run := stopped.u.Status().RunID
	stopped.stop()
	if got := outcome(stopped, run); got != api.RunInterrupted {
		t.Errorf("stopped: %s", got)
	}
	looped := newEnv(t, helperCfg("looped", "sleep", nil))
	looped.start()
	run = looped.u.Status().RunID
	if err := looped.u.EndRun(context.Background(), run, api.RunLoop, "Bash(ls) 3 times in a row"); err != nil {
		t.Fatal(err)
	}
	if got := outcome(looped, run); got != api.RunLoop {
		t.Errorf("EndRun: %s", got)
	}
	if r, _ := looped.runs.Get(run); r.Note != "Bash(ls) 3 times in a row" {
		t.Errorf("EndRun note: %q", r.Note)
	}
}
