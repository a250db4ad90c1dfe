package supervise

import (
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AScreenNoRuleKnowsIsReadyFromActivityAndSaysSo: a known
// agent whose program draws screens its adapter has no rule for (another
// version of it, here a made-up Cline asking a question in words of its
// own) is ready once idle, never waiting, and the tracker says since
// when no rule read its screen.
func TestScenario_AScreenNoRuleKnowsIsReadyFromActivityAndSaysSo(t *testing.T) {
	cfg := helperCfg("cline", "print", map[string]string{"HELPER_TEXT": "Cline 9.0|Shall I run touch x? (yes/no)|>"})
	cfg.Agent = "cline"
	cfg.IdleAfter = 300 * time.Millisecond
	e := newEnv(t, cfg)
	start := time.Now()
	e.start()
	e.waitFor("ready and the screen read", func() bool {
		_, r := e.u.AgentScreenRead()
		return e.u.AgentStatus().AgentState == api.AgentReady && r.Looked
	})
	run, r := e.u.AgentScreenRead()
	if run != e.u.Status().RunID || r.Rule != "" || r.Unrecognised.Before(start) {
		t.Errorf("screen read of run %d: %+v", run, r)
	}
	for _, ev := range e.rec.all() {
		if ev.Kind == api.EventAgent && ev.Agent.AgentState == api.AgentWaiting {
			t.Errorf("a screen no rule knows published waiting: %+v", ev.Agent)
		}
	}
}
