package term

import (
	"context"
	"time"

	"github.com/charmbracelet/x/vt"
)

// State is busy or idle.
type State string

// The two activity states.
const (
	Busy State = "busy" // output arrived within the last IdleAfter
	Idle State = "idle" // silent for IdleAfter or longer
)

// Activity is the busy/idle state of a unit. Since is when output resumed
// for busy, and the time of the last output for idle (or of the run's start
// when it printed nothing yet): an idle unit has been silent since then.
type Activity struct {
	State State     `json:"activity"`
	Since time.Time `json:"since"`
}

// IdleFor is how long a is silent at now; 0 when busy.
func (a Activity) IdleFor(now time.Time) time.Duration {
	if a.State != Idle {
		return 0
	}
	return max(0, now.Sub(a.Since))
}

// Activity returns the current state. It never waits for output being fed
// (list and describe call it for every harness).
func (t *Term) Activity() Activity {
	return t.shown.Load().act
}

func (t *Term) activityLocked() Activity {
	if t.busy {
		return Activity{State: Busy, Since: t.since}
	}
	return Activity{State: Idle, Since: t.since}
}

// WaitIdle returns once the unit has been idle (and so silent) for at least
// d, with the state it found, or ctx's error. A d below IdleAfter waits for
// IdleAfter of silence, because the unit is busy until then. It does not
// know whether the unit runs: a unit that stopped is silent, so idle.
func (t *Term) WaitIdle(ctx context.Context, d time.Duration) (Activity, error) {
	for {
		t.mu.Lock()
		a := t.activityLocked()
		// lastOut is also set by a reset: a run that printed nothing yet
		// is silent since it started.
		left := max(d, t.opt.IdleAfter) - t.opt.Now().Sub(t.lastOut)
		t.mu.Unlock()
		if a.State == Idle && left <= 0 {
			return a, nil
		}
		if left <= 0 {
			left = time.Millisecond // silent long enough; the idle timer is about to run
		}
		tm := time.NewTimer(left)
		select {
		case <-ctx.Done():
			tm.Stop()
			return a, ctx.Err()
		case <-tm.C:
		}
	}
}

// outputLocked notes that output arrived now and arms the timers.
func (t *Term) outputLocked() {
	now := t.opt.Now()
	t.lastOut = now
	t.dirty = true
	if !t.busy {
		t.busy = true
		t.since = now
		t.publishLocked()
		t.opt.OnActivity(t.activityLocked())
	}
	if t.idleTimer == nil {
		t.idleTimer = time.AfterFunc(t.opt.IdleAfter, t.onIdleTimer)
	}
	if t.sampleTimer == nil {
		t.sampleTimer = time.AfterFunc(t.opt.Sample, t.onSampleTimer)
	}
}

// onIdleTimer turns the unit idle once it has been silent for IdleAfter;
// output since the timer was armed moves the deadline instead of
// re-arming on every write.
func (t *Term) onIdleTimer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idleTimer = nil
	if t.closed || !t.busy {
		return
	}
	if left := t.opt.IdleAfter - t.opt.Now().Sub(t.lastOut); left > 0 {
		t.idleTimer = time.AfterFunc(left, t.onIdleTimer)
		return
	}
	t.drainLocked()
	t.takeLocked(takeAll)
	t.busy = false
	t.since = t.lastOut
	t.publishLocked()
	t.opt.OnActivity(t.activityLocked())
	t.parkLocked() // until the next output
}

// onSampleTimer samples the screen and re-arms while output arrives or
// rows wait to settle.
func (t *Term) onSampleTimer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sampleTimer = nil
	if t.closed {
		return
	}
	kind := takeQuiet
	if t.dirty {
		kind = takeStable
	}
	if t.takeLocked(kind) || kind == takeStable {
		t.sampleTimer = time.AfterFunc(t.opt.Sample, t.onSampleTimer)
	}
}

// takeLocked samples the active screen and reports whether rows wait to
// settle.
func (t *Term) takeLocked(kind takeKind) bool {
	if t.em == nil {
		return false // nothing printed this run
	}
	return t.takeScreenLocked(t.activeLocked(), kind)
}

func (t *Term) takeScreenLocked(scr *vt.Screen, kind takeKind) bool {
	t.dirty = false
	// Only a visible cursor marks a row still being written: TUIs hide
	// theirs and park it anywhere, Claude Code on the selected item.
	cursor := -1
	if scr == t.activeLocked() && !t.em.CursorHidden() {
		cursor = t.em.CursorPosition().Y
	}
	return t.act.sample(t.rowTextsLocked(scr), cursor, kind, t.opt.Now(), t.opt.OnLines)
}

// SetIdleAfter changes the silence after which the unit is idle (0: the
// default); it applies from the next output on.
func (t *Term) SetIdleAfter(d time.Duration) {
	if d <= 0 {
		d = DefaultIdleAfter
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.opt.IdleAfter = d
}
