package supervise

import (
	"context"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_NoEventCarriesAnotherRun spawns 500 runs of a harness whose
// child prints at once and exits, and checks every event: a state or
// activity event never carries run 0, and a busy event (caused by the
// run's own output) carries the run that printed. Spawn publishes the run
// before the output reader starts; it used to publish starting with the
// previous run and start the reader before running was published.
func TestScenario_NoEventCarriesAnotherRun(t *testing.T) {
	runsN := 500
	if testing.Short() {
		runsN = 50
	}
	cfg := UnitConfig{Name: "blurt", Kind: KindHarness, Cmd: "/bin/echo", Args: []string{"hello"},
		Restart: RestartNo, StopGrace: 5 * time.Second, IdleAfter: time.Millisecond}
	e := newEnv(t, cfg)
	var last uint64
	for i := range runsN {
		e.start()
		st := e.u.Status()
		if st.RunID == 0 || st.RunID == last {
			t.Fatalf("run %d: Start returned with run %d published (previous %d)", i, st.RunID, last)
		}
		last = st.RunID
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := e.runs.Wait(ctx, last)
		cancel()
		if err != nil {
			t.Fatalf("run %d (%d) did not end: %v", i, last, err)
		}
		e.waitFor("the run to be over", func() bool { return !e.u.Status().State.Active() })
	}
	var starting uint64
	busy := 0
	for _, ev := range e.rec.all() {
		switch ev.Kind {
		case EventState:
			if ev.RunID == 0 {
				t.Errorf("state event with run 0: %+v", ev)
			}
			if ev.State == string(StateStarting) {
				starting = ev.RunID
			}
		case EventActivity:
			if ev.RunID == 0 {
				t.Errorf("activity event with run 0: %+v", ev)
			}
			if ev.Activity == api.ActivityBusy {
				busy++
				if ev.RunID != starting {
					t.Errorf("busy event of run %d after run %d started: %+v", ev.RunID, starting, ev)
				}
			}
		}
	}
	if busy < runsN {
		t.Errorf("%d busy events for %d runs that each printed", busy, runsN)
	}
}
