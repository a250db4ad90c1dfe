package control

import (
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/runs"
)

// TestScenario_AJobsIntentStartsItAgainOnlyWhenItWasParkedForALimit: a
// restart = "no" job running when the daemon stops keeps its start intent
// in the state file, yet the next Boot does not start it; when its last
// run was parked for a usage limit (outcome limited), Boot does, as the
// reset means it to run.
func TestScenario_AJobsIntentStartsItAgainOnlyWhenItWasParkedForALimit(t *testing.T) {
	f := newFixture(t, sleeper("deploy", `restart = "no"`))
	f.mustCall(api.OpTrigger, api.TriggerArgs{Name: "deploy"}, nil)
	f.waitStates(map[string]string{"deploy": "running"})
	f.close()
	if !f.saved().Enabled["deploy"] {
		t.Fatalf("the running job's intent was not kept: %+v", f.saved())
	}
	f.open() // Boot has issued every autostart when it returns
	if st := f.states()["deploy"]; st != "stopped" {
		t.Fatalf("after a daemon restart the cut job is %s", st)
	}
	f.close()

	// Its last run parked for a usage limit: the next daemon starts it.
	store, err := runs.Open(filepath.Join(f.dir, "runs.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.Begin("deploy", api.CauseTrigger)
	if err == nil {
		err = store.Finish(r.ID, runs.Ending{Outcome: api.RunLimited, Note: "usage limit"})
	}
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	f.open()
	f.waitStates(map[string]string{"deploy": "running"})
}
