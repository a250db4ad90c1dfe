package control

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/schedule"
	"github.com/harness-dev/harness/internal/supervise"
)

// queuedFiring is a firing that waits for the job's active run to end
// (on_overlap = "queue"); at most one per job.
type queuedFiring struct {
	waiting atomic.Bool
	cause   atomic.Value // runs.Cause
}

// overlapOf is a job's on_overlap ("skip" when unset or not a harness).
func overlapOf(u *unit) string {
	if h := u.harness(); h != nil && h.Job.OnOverlap != "" {
		return string(h.Job.OnOverlap)
	}
	return schedule.OverlapSkip
}

// fire is the scheduler's callback: the job's firing goes through its
// on_overlap policy. It returns false when the firing did not start a run
// now (skipped or queued). Nothing slow runs here: a replace stops the
// active run off the scheduler's goroutine.
func (c *Control) fire(job string) bool {
	u, err := c.lookup(job)
	if err != nil {
		c.log.Warn("schedule fired for a unit that is gone", logkey.Job, job)
		return false
	}
	st := u.sup.Status()
	if !isActive(st.State) && c.refuseFiring(u, api.CauseSchedule) != nil {
		return false
	}
	switch schedule.Decide(overlapOf(u), isActive(st.State), u.queued.waiting.Load()) {
	case schedule.Skip:
		c.recordFiring(u, api.CauseSchedule, api.RunSkipped, fmt.Sprintf("run %d was active (on_overlap %s)", st.RunID, overlapOf(u)))
		return false
	case schedule.Queue:
		c.queue(u, api.CauseSchedule)
		return false
	case schedule.Replace:
		go func() {
			if _, err := c.replace(context.Background(), u, api.CauseSchedule); err != nil {
				c.log.Error("scheduled replace failed", logkey.Job, job, logkey.Err, err)
			}
		}()
		return true
	}
	if _, err := c.runNow(context.Background(), u, api.CauseSchedule); err != nil {
		c.log.Error("scheduled start failed", logkey.Job, job, logkey.Err, err)
	}
	return true
}

// triggerFiring applies the job's on_overlap policy to a `trigger`. done
// is true when res is the whole answer (skipped, queued); otherwise run is
// the new run to report (and maybe wait for).
func (c *Control) triggerFiring(ctx context.Context, u *unit, res *api.TriggerResult) (run uint64, done bool, err error) {
	st := u.sup.Status()
	switch schedule.Decide(overlapOf(u), isActive(st.State), u.queued.waiting.Load()) {
	case schedule.Skip:
		res.Skipped, res.ActiveRun, res.Outcome = true, st.RunID, api.RunSkipped
		c.recordFiring(u, api.CauseTrigger, api.RunSkipped, fmt.Sprintf("run %d was active (on_overlap %s)", st.RunID, overlapOf(u)))
		return 0, true, nil
	case schedule.Queue:
		res.Queued, res.ActiveRun = true, st.RunID
		c.queue(u, api.CauseTrigger)
		return 0, true, nil
	case schedule.Replace:
		res.Replaced = st.RunID
		run, err = c.replace(ctx, u, api.CauseTrigger)
	default:
		run, err = c.runNow(ctx, u, api.CauseTrigger)
	}
	if err != nil {
		return 0, true, fmt.Errorf("%s: %w", u.name, err)
	}
	return run, false, nil
}

// recordFiring keeps a firing that started no run as a run record.
func (c *Control) recordFiring(u *unit, cause runs.Cause, outcome api.RunOutcome, note string) {
	r, err := c.opt.Runs.Record(u.name, cause, outcome, note)
	if err != nil {
		c.log.Error("record firing", logkey.Job, u.name, logkey.Err, err)
		return
	}
	u.log.Event(r.ID, fmt.Sprintf("firing %s: %s", outcome, note))
	c.log.Info("firing "+string(outcome), logkey.Job, u.name, logkey.Run, r.ID)
}

// queue makes the job run once its active run ends. The run may have
// ended between the decision and now: then it runs at once.
func (c *Control) queue(u *unit, cause runs.Cause) {
	u.queued.cause.Store(cause)
	u.queued.waiting.Store(true)
	u.log.Event(u.sup.Status().RunID, "firing queued until the active run ends")
	if !isActive(u.sup.Status().State) {
		c.runQueued(u)
	}
}

// runQueued starts the queued firing, if one waits. It is called when the
// job stops being active (onEvent, on the actor: so it starts off it).
func (c *Control) runQueued(u *unit) {
	if !u.queued.waiting.CompareAndSwap(true, false) {
		return
	}
	cause, _ := u.queued.cause.Load().(runs.Cause)
	go func() {
		if _, err := c.runNow(context.Background(), u, cause); err != nil {
			c.log.Error("queued firing failed", logkey.Job, u.name, logkey.Err, err)
		}
	}()
}

// replace stops the job's active run (outcome interrupted) and starts a
// new one.
func (c *Control) replace(ctx context.Context, u *unit, cause runs.Cause) (uint64, error) {
	before := u.sup.Status()
	if err := c.restartUnit(ctx, u, cause); err != nil {
		return 0, err
	}
	after := u.sup.Status()
	if after.RunID == before.RunID {
		return 0, fmt.Errorf("%s did not start a new run (state %s)", u.name, after.State)
	}
	return after.RunID, nil
}

// catchUp runs at boot, once the scheduler is armed: for every job with a
// schedule it counts the firings that fell due since its last firing on
// record (the daemon was down). With catch_up one run starts now; without,
// one `missed` record says how many were missed.
func (c *Control) catchUp(now time.Time) {
	for _, u := range c.harnesses() {
		h := u.harness()
		if h == nil || h.Schedule == "" {
			continue
		}
		sched, err := schedule.Parse(h.Schedule)
		if err != nil {
			continue // the config validated it; a reload raced us
		}
		var last time.Time
		rs := c.opt.Runs.List(u.name, 0)
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Cause == api.CauseSchedule {
				last = rs[i].StartedAt
				break
			}
		}
		n, first := schedule.Missed(sched, last, now)
		if n == 0 {
			continue
		}
		note := fmt.Sprintf("%d firing(s) due while the daemon was down, the first at %s", n, first.Format(time.RFC3339))
		if !h.Job.CatchUp {
			c.recordFiring(u, api.CauseSchedule, api.RunMissed, note)
			continue
		}
		u.log.Event(u.sup.Status().RunID, "catch_up: "+note+"; running once now")
		go func() {
			if _, err := c.runNow(context.Background(), u, api.CauseSchedule); err != nil {
				c.log.Error("catch-up start failed", logkey.Job, u.name, logkey.Err, err)
			}
		}()
	}
}

// jobStateChanged follows a job's state for its queued firing.
func (c *Control) jobStateChanged(u *unit, st supervise.State) {
	if !isActive(st) && u.queued.waiting.Load() {
		c.runQueued(u)
	}
}

// keepRuns applies a harness's keep_runs to the run history.
func (c *Control) keepRuns(u *unit) {
	if h := u.harness(); h != nil && !u.gone.Load() {
		c.opt.Runs.SetRetain(u.name, h.Job.KeepRuns)
	}
}
