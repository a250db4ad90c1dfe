package control

import (
	"time"

	"github.com/harness-dev/harness/internal/api"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/term"
)

// withAgent adds the agent of a harness to its list row (DESIGN §16) and,
// while the harness has a run, what that agent is doing. Upstreams keep
// their shape.
func withAgent(ui *api.UnitInfo, u *unit, st supervise.Status) {
	h := u.harness()
	if h == nil {
		return
	}
	ui.Agent = h.Agent
	t := u.sup.Term()
	if t == nil || !st.HasRun() {
		return
	}
	a := agent.MustLookup(h.Agent)
	v := a.Classify(agent.Screen{Busy: t.Activity().State == term.Busy}, time.Now())
	ui.AgentView = v
}
