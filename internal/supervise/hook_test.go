package supervise

import (
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AHookIsFresherThanTheScreen: a Claude-like screen at its
// prompt reads ready; the agent's hook then says working, which is
// published at once and stands against the unchanged screen for HookHold,
// after which the screen rules take over again (ready). A hook of another
// run changes nothing; the session and transcript a hook names are kept
// for the run.
func TestScenario_AHookIsFresherThanTheScreen(t *testing.T) {
	old := HookHold
	HookHold = 600 * time.Millisecond
	t.Cleanup(func() { HookHold = old })
	cfg := helperCfg("claude", "print", map[string]string{"HELPER_TEXT": "● Done.|────|❯ |────|  ? for shortcuts"})
	cfg.Agent = "claude-code"
	cfg.IdleAfter = 200 * time.Millisecond
	e := newEnv(t, cfg)
	e.start()
	states := func() []string {
		var out []string
		for _, ev := range e.rec.all() {
			if ev.Kind == api.EventAgent {
				out = append(out, string(ev.Agent.AgentState))
			}
		}
		return out
	}
	e.waitFor("ready from the screen", func() bool { return e.u.AgentStatus().AgentState == api.AgentReady })
	run := e.u.Status().RunID
	if _, ok := e.u.AgentHook(run+1, agent.HookSignal{State: api.AgentWorking}); ok {
		t.Fatal("a hook of another run was applied")
	}
	before := len(states())
	hookAt := time.Now()
	st, ok := e.u.AgentHook(run, agent.HookSignal{State: api.AgentWorking, SessionID: "s-1", Transcript: "/x/s-1.jsonl"})
	if !ok || st.AgentState != api.AgentWorking || e.u.AgentStatus().AgentState != api.AgentWorking {
		t.Fatalf("after the hook: %+v, %v", st, ok)
	}
	if r, s, tr := e.u.AgentSession(); r != run || s != "s-1" || tr != "/x/s-1.jsonl" {
		t.Errorf("AgentSession = %d %q %q", r, s, tr)
	}
	e.waitFor("ready again from the screen", func() bool { return e.u.AgentStatus().AgentState == api.AgentReady })
	if held := time.Since(hookAt); held < HookHold {
		t.Errorf("the screen took over %v after the hook, before HookHold %v", held, HookHold)
	}
	if got := states()[before:]; !slices.Equal(got, []string{"working", "ready"}) {
		t.Errorf("agent events after the hook %q, want working then ready", got)
	}
}
