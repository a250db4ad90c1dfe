package control

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/term"
)

// Bounds of the terminal operations (docs/design/terminals.md). idle_s and timeout_s
// are bounded like trigger's timeout_s: a larger value would overflow
// time.Duration and end the wait at once.
const (
	// DefaultWaitTimeout bounds `wait` without timeout_s.
	DefaultWaitTimeout = 10 * time.Minute
	// DefaultScreenTimeout bounds `screen` with idle_s and without
	// timeout_s: a reader wants a screen soon, and MCP clients give up on a
	// call after about a minute.
	DefaultScreenTimeout = 30 * time.Second
	// MaxScrollback is the most scrollback lines `screen` returns, all a
	// unit keeps.
	MaxScrollback = term.DefaultScrollback
)

// terminalOf finds the terminal of a harness that has a process: an
// unknown name is unknown_harness, an upstream (a stdio unit, no
// terminal) invalid_argument, a harness without a run not_running.
func (c *Control) terminalOf(name string) (*unit, *term.Term, supervise.Status, error) {
	u, err := c.lookup(name)
	if err != nil {
		return nil, nil, supervise.Status{}, err
	}
	t := u.sup.Term()
	if t == nil {
		return nil, nil, supervise.Status{}, errcode.Errorf(errcode.InvalidArgument, "%s is an MCP upstream on pipes: it has no terminal", name)
	}
	st := u.sup.Status()
	if !st.HasRun() {
		return nil, nil, st, errcode.Errorf(errcode.NotRunning, "%s is %s: it has no process to show", name, st.State)
	}
	return u, t, st, nil
}

// seconds checks a duration argument in seconds: 0 up to
// MaxTriggerTimeout.
func seconds(name string, v float64) (time.Duration, error) {
	if v < 0 || v > MaxTriggerTimeout.Seconds() || math.IsNaN(v) {
		return 0, errcode.Errorf(errcode.InvalidArgument, "%s must be between 0 and %g (%s)", name, MaxTriggerTimeout.Seconds(), MaxTriggerTimeout)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// idleWait checks the idle_s and timeout_s of a wait; a timeout of 0 is
// def.
func idleWait(idleS, timeoutS float64, def time.Duration) (idle, timeout time.Duration, err error) {
	if idle, err = seconds("idle_s", idleS); err != nil {
		return 0, 0, err
	}
	if timeout, err = seconds("timeout_s", timeoutS); err != nil {
		return 0, 0, err
	}
	if timeout == 0 {
		timeout = def
	}
	return idle, timeout, nil
}

// errRunEnded cancels a wait whose run ended.
var errRunEnded = errors.New("the run ended")

// waitIdle waits until t has been idle for d, for at most timeout, while
// run goes on. timedOut reports the timeout; a run that ends first is
// not_running.
func (c *Control) waitIdle(ctx context.Context, name string, t *term.Term, run uint64, d, timeout time.Duration) (a term.Activity, timedOut bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	go func() {
		// A stopped unit is silent, so idle: without this, a wait would
		// report a crash as the quiet it was waiting for.
		if _, err := c.opt.Runs.Wait(rctx, run); err == nil {
			stop(errRunEnded)
		}
	}()
	a, err = t.WaitIdle(rctx, d)
	switch {
	case err == nil:
		return a, false, nil
	case errors.Is(context.Cause(rctx), errRunEnded):
		return a, false, errcode.Errorf(errcode.NotRunning, "%s: run %d ended while waiting for it to be idle", name, run)
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return a, true, nil
	}
	return a, false, err
}

// Wait answers `wait`: it returns once the harness has been idle for
// idle_s (at least its idle_after), or says timed_out after timeout_s.
func (c *Control) Wait(ctx context.Context, a api.WaitArgs) (api.WaitResult, error) {
	idle, timeout, err := idleWait(a.IdleS, a.TimeoutS, DefaultWaitTimeout)
	if err != nil {
		return api.WaitResult{}, err
	}
	if len(a.State) > 0 {
		if a.IdleS != 0 {
			return api.WaitResult{}, errcode.Errorf(errcode.InvalidArgument, "wait for idle_s or for an agent state, not both")
		}
		return c.waitAgent(ctx, a, timeout)
	}
	_, t, st, err := c.terminalOf(a.Name)
	if err != nil {
		return api.WaitResult{}, err
	}
	act, timedOut, err := c.waitIdle(ctx, a.Name, t, st.RunID, idle, timeout)
	if err != nil {
		return api.WaitResult{}, err
	}
	return api.WaitResult{Name: a.Name, IdleS: roundS(act.IdleFor(time.Now())), TimedOut: timedOut}, nil
}

// Screen answers `screen`: the rendered screen of a harness that runs.
// With idle_s it first waits as `wait` does, bounded by timeout_s, and on
// timeout answers with the screen as it is and a note.
func (c *Control) Screen(ctx context.Context, a api.ScreenArgs) (api.Screen, error) {
	if a.Scrollback < 0 || a.Scrollback > MaxScrollback {
		return api.Screen{}, errcode.Errorf(errcode.InvalidArgument, "scrollback must be between 0 and %d (the lines a harness keeps)", MaxScrollback)
	}
	idle, timeout, err := idleWait(a.IdleS, a.TimeoutS, DefaultScreenTimeout)
	if err != nil {
		return api.Screen{}, err
	}
	u, t, st, err := c.terminalOf(a.Name)
	if err != nil {
		return api.Screen{}, err
	}
	var note string
	if a.IdleS > 0 {
		_, timedOut, err := c.waitIdle(ctx, a.Name, t, st.RunID, idle, timeout)
		if err != nil {
			return api.Screen{}, err
		}
		if timedOut {
			note = "timed out after " + timeout.String() + " waiting for " + idle.String() + " of idle; this is the screen as it is"
		}
		st = u.sup.Status()
	}
	s := t.Snapshot(term.SnapshotOptions{Scrollback: a.Scrollback, ANSI: a.ANSI})
	res := api.Screen{
		Name: a.Name, RunID: st.RunID, Cols: s.Cols, Rows: s.Rows,
		Cursor:    api.Cursor{Row: s.Cursor.Row, Col: s.Cursor.Col, Visible: s.Cursor.Visible},
		Title:     s.Title,
		AltScreen: s.AltScreen,
		Lines:     s.Lines, Scrollback: nonNil(s.Scrollback),
		Note: note,
	}
	if a.ANSI {
		res.Lines = s.ANSI
	}
	// The screen is rendered for a reader (an agent, through harness_screen):
	// secrets are masked (docs/design/masking.md); attach shows the bytes as they are.
	m := c.opt.Masker
	res.Title = m.String(res.Title)
	if a.ANSI {
		m.Strings(res.Lines)
	} else {
		m.Rows(res.Lines, s.Cols)
	}
	m.Rows(res.Scrollback, s.Cols)
	res.Activity, res.IdleS, res.IdleSince = activityView(t.Activity(), time.Now())
	return res, nil
}

// activityView is a terminal's activity as the wire shows it: the state,
// seconds idle (0 while busy) and since when, while idle.
func activityView(a term.Activity, now time.Time) (state string, idleS float64, since *time.Time) {
	if a.State == term.Idle {
		s := a.Since
		since = &s
	}
	return string(a.State), idleSeconds(a, now), since
}

// idleSeconds is idle_s: seconds idle at now, to the millisecond.
func idleSeconds(a term.Activity, now time.Time) float64 { return roundS(a.IdleFor(now)) }

// roundS rounds seconds to milliseconds.
func roundS(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}
