package control

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/hold"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/supervise"
)

// holdWatch is the goroutine that follows every harness's hold across
// time (hours boundaries, midnight): it publishes changes, parks a run at
// the end of its hours and starts an enabled harness when its hold lifts.
type holdWatch struct {
	wake      chan struct{} // capacity 1: re-evaluate now
	stop      context.CancelFunc
	done      chan struct{}
	maxAgents atomic.Int64 // [daemon] max_concurrent_agents
	parking   sync.Map     // unit name -> struct{}: a window-end stop in progress
}

// unitHold is a unit's last published hold.
type unitHold struct{ last atomic.Pointer[api.Hold] }

// holdLimits are a harness's hold keys; ok is false for an upstream.
func holdLimits(u *unit) (hold.Limits, bool) {
	h := u.harness()
	if h == nil {
		return hold.Limits{}, false
	}
	return hold.Limits{Hours: h.Holds.Hours, MaxRunsPerDay: h.Holds.MaxRunsPerDay, MaxCostPerDay: h.Holds.MaxCostPerDay,
		Agent: h.Agent != "" && h.Agent != "generic"}, true
}

// holdOf is the hold on starting u at now, nil when it may start.
func (c *Control) holdOf(u *unit, now time.Time) *api.Hold {
	return c.holdCounting(u, now, &agentCount{c: c})
}

// holdCounting is holdOf with the fleet's running agents counted by ac,
// which a list shares between its rows: counting them per row made a
// list of n agents under max_concurrent_agents cost n².
func (c *Control) holdCounting(u *unit, now time.Time, ac *agentCount) *api.Hold {
	l, ok := holdLimits(u)
	if !ok {
		return nil
	}
	agents := 0
	if l.Agent && c.holds.maxAgents.Load() > 0 {
		agents = ac.count()
	}
	return c.evaluateHold(u, l, c.holdUsage(u, l, now), agents, now)
}

// agentCount counts the fleet's running agents once, when first asked.
type agentCount struct {
	c       *Control
	n       int
	counted bool
}

func (a *agentCount) count() int {
	if !a.counted {
		a.n, a.counted = activeAgents(a.c.harnesses()), true
	}
	return a.n
}

// evaluateHold is holdOf with u's usage read and the fleet's running
// agents counted (agents, u among them if it runs one), so the watcher
// counts them once per pass, not once per harness.
func (c *Control) evaluateHold(u *unit, l hold.Limits, use hold.Usage, agents int, now time.Time) *api.Hold {
	if l.Agent {
		if use.MaxAgents = int(c.holds.maxAgents.Load()); use.MaxAgents > 0 {
			use.OtherAgents = agents
			if isActive(u.sup.Status().State) {
				use.OtherAgents--
			}
		}
	}
	return hold.Evaluate(now, l, use)
}

// activeAgents counts the harnesses in hs that run an agent now, what
// max_concurrent_agents limits.
func activeAgents(hs []*unit) int {
	n := 0
	for _, u := range hs {
		if l, _ := holdLimits(u); l.Agent && isActive(u.sup.Status().State) {
			n++
		}
	}
	return n
}

// holdUsage is what u has used that a hold judges, but for the agent
// count (which needs the fleet, so c.mu): the usage limit, today's runs
// and cost. It reads only the run history.
func (c *Control) holdUsage(u *unit, l hold.Limits, now time.Time) hold.Usage {
	var use hold.Usage
	use.LimitedUntil, use.LimitNote = c.limitedUntil(u.name)
	if l.MaxRunsPerDay > 0 {
		use.RunsToday = c.runsSince(u.name, hold.StartOfDay(now))
	}
	if l.MaxCostPerDay > 0 {
		use.CostToday = c.costSince(u.name, hold.StartOfDay(now))
	}
	return use
}

// restartHold says why a policy restart of u is held at now ("" when it
// is not): hours, the day's budget or a usage limit (docs/design/agents.md). It runs
// on u's actor, so it takes no c.mu: max_concurrent_agents is not asked
// (restarting a crashed agent does not add one). The watcher publishes the
// hold and starts u when it lifts (u stays enabled).
func (c *Control) restartHold(u *unit, now time.Time) string {
	l, ok := holdLimits(u)
	if !ok {
		return ""
	}
	if h := hold.Evaluate(now, l, c.holdUsage(u, l, now)); h != nil {
		c.recheckHolds() // publish it now
		return hold.Message(u.name, h)
	}
	return ""
}

// runsSince counts the runs of name that spawned (or tried to) since t:
// records of firings that started nothing do not spend the budget.
func (c *Control) runsSince(name string, t time.Time) int {
	n := 0
	for _, r := range c.opt.Runs.List(name, 0) {
		if r.StartedAt.Before(t) {
			continue
		}
		switch r.Outcome {
		case api.RunSkipped, api.RunMissed, api.RunHeld, api.RunSetupFailed:
		default:
			n++
		}
	}
	return n
}

// costSince sums what the runs of name started since t cost (cost_usd,
// as their agents reported it).
func (c *Control) costSince(name string, t time.Time) float64 {
	sum := 0.0
	for _, r := range c.opt.Runs.List(name, 0) {
		if !r.StartedAt.Before(t) {
			sum += r.CostUSD
		}
	}
	return sum
}

// admit refuses a start of u that a hold forbids, unless forced: the
// error carries the code held and says the reason and until when.
func (c *Control) admit(u *unit, force bool) error {
	if force {
		return nil
	}
	if h := c.holdOf(u, time.Now()); h != nil {
		return fmt.Errorf("%s: %w", hold.Message(u.name, h), errcode.ErrHeld)
	}
	return nil
}

// refuseFiring records a firing a hold refused as a run with outcome held
// and returns the held error.
func (c *Control) refuseFiring(u *unit, cause runs.Cause) error {
	h := c.holdOf(u, time.Now())
	if h == nil {
		return nil
	}
	c.recordFiring(u, cause, api.RunHeld, hold.Message(u.name, h))
	return fmt.Errorf("%s: %w", hold.Message(u.name, h), errcode.ErrHeld)
}

// startHoldWatch starts the watcher (Boot).
func (c *Control) startHoldWatch() {
	ctx, cancel := context.WithCancel(context.Background())
	c.holds.stop = cancel
	go func() {
		defer close(c.holds.done)
		hold.Watch(ctx, c.holds.wake, c.holdTick)
	}()
}

// stopHoldWatch ends the watcher (Close); safe when it never started.
func (c *Control) stopHoldWatch() {
	if c.holds.stop == nil {
		return
	}
	c.holds.stop()
	<-c.holds.done
}

// holdsHook re-evaluates holds when a harness's run ends: budgets and the
// count of running agents moved.
func (c *Control) holdsHook(u *unit, ev supervise.Event) {
	if ev.Kind == supervise.EventExit {
		c.recheckHolds()
	}
}

// recheckHolds makes the watcher re-evaluate now (a reload, a run ended).
func (c *Control) recheckHolds() {
	select {
	case c.holds.wake <- struct{}{}:
	default:
	}
}

// holdTick evaluates every harness's hold at now and acts on changes. It
// returns the next time the clock alone may change one.
func (c *Control) holdTick(now time.Time) time.Time {
	var next time.Time
	hs := c.harnesses()
	agents := 0
	if c.holds.maxAgents.Load() > 0 {
		agents = activeAgents(hs)
	}
	for _, u := range hs {
		l, _ := holdLimits(u)
		if n := hold.NextChange(now, l); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		use := c.holdUsage(u, l, now)
		if n := use.LimitedUntil; n.After(now) && (next.IsZero() || n.Before(next)) {
			next = n // a usage limit's reset
		}
		h := c.evaluateHold(u, l, use, agents, now)
		st := u.sup.Status()
		if h != nil && h.Reason == api.HoldHours && st.HasRun() {
			c.parkAtWindowEnd(u, st.RunID)
		}
		old := u.hold.last.Load()
		if hold.Same(old, h) {
			continue
		}
		u.hold.last.Store(h)
		c.publishHold(u, h)
		if h == nil && old != nil && c.meansToRun(u, st) && !isActive(st.State) && st.State != supervise.StateRestarting {
			// The hold lifted on a harness that means to run.
			u.log.Event(st.RunID, fmt.Sprintf("hold %s lifted: starting", old.Reason))
			c.goBackground(func() {
				if err := c.startUnit(context.Background(), u, api.CauseAutostart); err != nil {
					c.log.Error("start after a hold failed", logkey.Unit, u.name, logkey.Err, err)
				}
			})
		}
	}
	return next
}

// publishHold tells subscribers (top, the event stream) about a new hold.
func (c *Control) publishHold(u *unit, h *api.Hold) {
	st := u.sup.Status()
	msg := "hold lifted"
	if h != nil {
		msg = hold.Message(u.name, h)
	}
	u.log.Event(st.RunID, msg)
	c.publish(supervise.Event{Kind: api.EventHold, Unit: u.name, State: string(st.State), RunID: st.RunID,
		Message: msg, Hold: h, Time: time.Now()})
}

// parkAtWindowEnd stops run at the end of the harness's hours once it is
// idle (at its prompt, its turn done), or after its stop_grace at the
// latest; the harness stays enabled and starts again when the window
// opens.
func (c *Control) parkAtWindowEnd(u *unit, run uint64) {
	if _, busy := c.holds.parking.LoadOrStore(u.name, struct{}{}); busy {
		return
	}
	grace := time.Duration(0)
	if h := u.harness(); h != nil {
		grace = h.StopGrace // config's default applies when unset
	}
	// Counted in c.background, so Close waits for the park (at most the
	// stop_grace) instead of leaving it to act on a closed fleet.
	started := c.goBackground(func() {
		defer c.holds.parking.Delete(u.name)
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if t := u.sup.Term(); t != nil {
			if _, err := t.WaitIdle(ctx, 0); err != nil {
				c.log.Info("window end: not idle within stop_grace, stopping anyway", logkey.Unit, u.name)
			}
		}
		if err := u.sup.Park(context.Background(), run, api.RunInterrupted, "outside hours: the window closed"); err != nil {
			c.log.Error("park at window end", logkey.Unit, u.name, logkey.Err, err)
		}
	})
	if !started {
		c.holds.parking.Delete(u.name) // the daemon is closing: it stops the run itself
	}
}

// meansToRun: the harness is enabled (parked at its window's end, or a
// start intent the daemon keeps) and not a job, which runs by firing.
func (c *Control) meansToRun(u *unit, st supervise.Status) bool {
	if h := u.harness(); h == nil || h.Schedule != "" {
		return false
	}
	if st.Enabled {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.wantsAutostartLocked(u)
}
