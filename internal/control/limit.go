package control

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/hold"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
)

// Usage limits (docs/design/agents.md): an agent that shows its usage limit (agent
// state limited) or a job that ended on one (outcome limited) is parked
// until the reset plus jitter, stopped, or left alone, as on_limit says.
// The park is the run's limit_until in the run history: the hold is read
// back from there, so it outlives a daemon restart.

// limitSeen acts on a usage limit of u's run: from an agent event (the
// screen says limited) or a job run that ended limited. It runs off the
// actor (onEvent must not block).
func (c *Control) limitSeen(u *unit, run uint64, reset time.Time, note string, ended bool) {
	h := u.harness()
	if h == nil {
		return
	}
	now := time.Now()
	d := hold.OnLimit(string(h.AgentRun.OnLimit), reset, now, rand.Float64())
	ctx := context.Background()
	switch {
	case d.Stop:
		u.log.Event(run, "usage limit: on_limit = \"stop\"")
		if !ended {
			if err := u.sup.EndRun(ctx, run, api.RunLimited, "usage limit: "+note); err != nil {
				c.log.Error("usage limit: stop", logkey.Unit, u.name, logkey.Err, err)
			}
		}
	case d.Park:
		if r, ok := c.opt.Runs.Get(run); ok && r.LimitUntil != nil {
			return // parked already (the screen keeps saying limited)
		}
		if err := c.opt.Runs.SetLimitUntil(run, d.Until); err != nil {
			c.log.Error("usage limit: record", logkey.Unit, u.name, logkey.Err, err)
			return
		}
		u.log.Event(run, fmt.Sprintf("usage limit: parked until %s", d.Until.Format(time.RFC3339)))
		if !ended {
			if err := u.sup.Park(ctx, run, api.RunLimited, "usage limit: "+note); err != nil {
				c.log.Error("usage limit: park", logkey.Unit, u.name, logkey.Err, err)
			}
		}
		c.recheckHolds()
	}
}

// onAgentLimit is the part of onEvent for usage limits; it must not block.
func (c *Control) onAgentLimit(u *unit, ev supervise.Event) {
	h := u.harness()
	if h == nil || h.AgentRun.OnLimit == config.OnLimitIgnore {
		return
	}
	if ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState != api.AgentWorking && ev.Agent.AgentState != api.AgentStarting {
		defer u.readied.Store(ev.RunID)
	}
	switch {
	case ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState == api.AgentWorking:
		// An interactive agent works once it has shown a prompt or a
		// dialog: a resumed one busy drawing its old conversation (Codex)
		// has not.
		if u.readied.Load() == ev.RunID || h.IsJob() && h.AgentRun.HasPrompt() {
			u.worked.Store(ev.RunID)
		}
	case ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState == api.AgentLimited:
		if u.worked.Load() != ev.RunID {
			// A resumed agent shows its conversation again, the old
			// limit message with it: only a limit met after this run
			// worked is this run's.
			return
		}
		var reset time.Time
		if ev.Agent.Until != nil {
			reset = *ev.Agent.Until
		}
		run, note := ev.RunID, ev.Agent.AgentMessage
		c.goBackground(func() { c.limitSeen(u, run, reset, note, false) })
	case ev.Kind == supervise.EventExit:
		r, ok := c.opt.Runs.Get(ev.RunID)
		if !ok || r.Outcome != api.RunLimited || r.LimitUntil != nil {
			return
		}
		var reset time.Time
		if ul := agent.MustLookup(h.Agent).UsageLimit; ul != nil {
			reset, _ = ul(r.Note, time.Now())
		}
		run := ev.RunID
		c.goBackground(func() { c.limitSeen(u, run, reset, r.Note, true) })
	}
}

// limitedUntil is the usage-limit park of name's last run that ran
// (records of firings refused meanwhile do not end it), zero when none.
func (c *Control) limitedUntil(name string) (time.Time, string) {
	r, ok := c.opt.Runs.Latest(name, 50, startedNothing)
	if !ok || r.LimitUntil == nil {
		return time.Time{}, ""
	}
	return *r.LimitUntil, r.Note
}

// startedNothing: the record of a firing that ran nothing.
func startedNothing(r runs.Run) bool {
	return r.Outcome == api.RunHeld || r.Outcome == api.RunSkipped || r.Outcome == api.RunMissed || r.Outcome == api.RunSetupFailed
}

// parkedForLimit reports whether name's last run was parked for a usage
// limit (outcome limited), which starts it again at the reset.
func (c *Control) parkedForLimit(name string) bool {
	r, ok := c.opt.Runs.Latest(name, 50, startedNothing)
	return ok && r.Outcome == api.RunLimited
}

// guardLoop counts call, made by run's agent, and ends the run with
// outcome loop, naming the call, when it is the limit-th same call in a
// row (loop_guard, docs/design/agents.md; 0: off). It reports whether it did.
func (c *Control) guardLoop(u *unit, limit int, run uint64, call string) bool {
	u.repeats.Lock()
	u.repeats.r = u.repeats.r.Next(run, call)
	r := u.repeats.r
	u.repeats.Unlock()
	if !r.Tripped(limit) {
		return false
	}
	note := fmt.Sprintf("loop guard: the same tool call %d times in a row: %s", r.N, call)
	c.goBackground(func() {
		if err := u.sup.EndRun(context.Background(), run, api.RunLoop, note); err != nil {
			c.log.Error("loop guard: end run", logkey.Unit, u.name, logkey.Err, err)
		}
	})
	return true
}
