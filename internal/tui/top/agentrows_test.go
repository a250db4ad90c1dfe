package top

import (
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AWaitingAgentStandsOut: an agent event (docs/design/agents.md) puts a
// known agent's state in the activity column without a fetch, a waiting
// one drawn in its own colours; a generic harness keeps busy/idle.
func TestScenario_AWaitingAgentStandsOut(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 120, 30, nil)
	d.advance(selectDelay)
	f.takeCalls()
	d.event(api.Event{Kind: api.EventAgent, Unit: "web/api", Agent: &api.AgentView{Agent: "claude-code",
		AgentState: api.AgentWaiting, WaitingFor: api.WaitingPermission, Prompt: "rm -rf build", Choices: []string{"Yes", "No"}}})
	if l := d.line("api"); !strings.Contains(l, "waiting") {
		t.Fatalf("api row after a waiting event: %q", l)
	}
	if calls := f.takeCalls(); len(calls) != 0 {
		t.Errorf("an agent event fetched %v", calls)
	}
	if !strings.Contains(d.m.Render(), agentStyles[api.AgentWaiting].Styled(pad("waiting", 10, false))) {
		t.Errorf("the waiting cell is not drawn to stand out:\n%q", d.m.Render())
	}
	d.event(api.Event{Kind: api.EventAgent, Unit: "beta", Agent: &api.AgentView{Agent: "generic", AgentState: api.AgentReady}})
	d.event(api.Event{Kind: api.EventActivity, Unit: "beta", Activity: api.ActivityBusy, Time: d.now})
	if l := d.line("beta"); !strings.Contains(l, "busy") {
		t.Errorf("a generic harness shows %q, want busy", l)
	}
}

// TestScenario_AHeldHarnessShowsItsHold: a hold event makes top fetch the
// harness, whose row then says held and whose preview says why and until
// when.
func TestScenario_AHeldHarnessShowsItsHold(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 160, 30, nil)
	d.advance(selectDelay)
	if l := d.line("beta"); strings.Contains(l, "usage_limit") {
		t.Fatalf("beta before its hold: %q", l)
	}
	until := d.now.Add(20 * time.Second)
	f.mu.Lock()
	f.units["beta"].Hold = &api.Hold{Reason: api.HoldUsageLimit, Until: &until}
	f.mu.Unlock()
	d.event(api.Event{Kind: api.EventHold, Unit: "beta", Hold: f.units["beta"].Hold})
	d.advance(time.Second)
	if l := d.line("beta"); !strings.Contains(l, "held") {
		t.Fatalf("beta held: %q\n%s", l, d.m.Render())
	}
	d.key("down") // select beta: its preview names the hold and until when
	d.advance(selectDelay)
	if s := d.screen(); !strings.Contains(s, "held: usage_limit "+clock(until, d.now)) {
		t.Fatalf("beta's preview:\n%s", s)
	}
}
