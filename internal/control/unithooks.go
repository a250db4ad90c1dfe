package control

import (
	"github.com/harness-dev/harness/internal/supervise"
)

// A unitHook is one feature's part of what a unit's event sets off. Each
// feature that reacts to units registers its hook in unitHooks, in the
// file where the feature lives; onEvent runs them in that order on the
// unit's actor goroutine, then publishes the event. A hook must not block:
// anything slow (a disk write, a transcript read, a stop) goes to the saver
// or to goBackground.
type unitHook struct {
	kind supervise.Kind // the units it is for; "" for every unit
	run  func(u *unit, ev supervise.Event)
}

// unitHooks are the features that react to a unit's events, in the order
// they run. Order matters in one place: the broker hears of an upstream's
// exit before anything else can route a call to it.
func (c *Control) unitHooks() []unitHook {
	return []unitHook{
		{supervise.KindUpstream, c.upstreamHook}, // the broker's link (fleet.go)
		{"", c.intentHook},                       // the saved intent, a job's firing state (intent.go)
		{supervise.KindHarness, c.holdsHook},     // holds (holds.go)
		{supervise.KindHarness, c.onAgentLimit},  // usage limits (limit.go)
		{supervise.KindHarness, c.onAgentPrompt}, // interactive prompts (prompt.go)
		{supervise.KindHarness, c.onAgentReview}, // reviews (review.go)
		{supervise.KindHarness, c.turnDoneHook},  // turn_done (turndone.go)
		{supervise.KindHarness, c.scratchEnded},  // scratch harnesses (scratch.go)
	}
}

// onEvent runs on a unit's actor goroutine: it must not block. The agent
// view an event carries is masked first, so that no hook and no subscriber
// sees what the screen showed of a secret.
func (c *Control) onEvent(u *unit, ev supervise.Event) {
	if ev.Agent != nil {
		v := maskAgent(c.Masker(), *ev.Agent)
		ev.Agent = &v
	}
	for _, h := range c.hooks {
		if h.kind == "" || h.kind == u.kind {
			h.run(u, ev)
		}
	}
	c.publish(ev)
}
