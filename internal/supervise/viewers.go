package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/term"
)

// MaxViewerLag bounds the output queued for one attached viewer. The PTY
// reader never waits for a viewer: one that falls further behind is not
// disconnected, its queued output is DROPPED and, when it reads next, it
// gets a repaint of the current screen from the emulator instead, taken
// at the same point of the stream. (A viewer whose connection stops
// altogether is disconnected by the socket's write timeout.)
const MaxViewerLag = 1 << 20

// fanout hands a harness's PTY output to its terminal and to the attached
// viewers. Feeding the terminal and queueing for the viewers happen under
// one lock, so a viewer's repaint (a snapshot of the terminal) and the
// output queued after it join up exactly.
//
// Lock order: fanout.mu, then the Term's own lock.
type fanout struct {
	name   string
	t      *term.Term
	maxLag int // MaxViewerLag; tests lower it

	mu      sync.Mutex
	viewers map[*Viewer]struct{}
	live    bool   // a run started and the unit has not stopped or failed since
	run     uint64 // the latest run
	state   string // the unit's state, for new viewers
}

func newFanout(name string, t *term.Term) *fanout {
	return &fanout{name: name, t: t, maxLag: MaxViewerLag, viewers: map[*Viewer]struct{}{}}
}

// write is the PTY reader's: output into the terminal and every viewer's
// queue. It waits for nothing but the lock.
func (f *fanout) write(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t.Feed(p)
	for v := range f.viewers {
		v.pushOutputLocked(p)
	}
}

// started tells viewers that run began (the actor calls it at spawn).
func (f *fanout) started(run uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live, f.run = true, run
	for v := range f.viewers {
		if v.run != run {
			v.run = run
			v.pushEventLocked(api.AttachEvent{Kind: api.AttachRestarted, Name: f.name, RunID: run})
		}
	}
}

// setState records the unit's state for the notices of new viewers.
func (f *fanout) setState(state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = state
}

// ended tells viewers that the unit stopped or failed, and lets them go.
func (f *fanout) ended(state, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live, f.state = false, state
	for v := range f.viewers {
		v.pushEventLocked(api.AttachEvent{Kind: api.AttachEnded, Name: f.name, RunID: f.run, State: state, Message: message})
		delete(f.viewers, v)
	}
}

// tellViewers follows a state change of the unit: stopped or failed ends
// every viewer, except the stopped a restart passes through on its way to
// the next run (viewers stay attached across restarts).
func (a *actor) tellViewers(s State) {
	f := a.u.out
	if f == nil {
		return
	}
	if s.Active() || s == StateStopped && a.pendStart != nil && !a.closing {
		f.setState(string(s))
		return
	}
	f.ended(string(s), a.endText())
}

// endText says how the unit's last run ended, for the viewers it ends.
func (a *actor) endText() string {
	switch {
	case a.lastErr != "":
		return "spawn failed: " + a.lastErr
	case a.lastSignal != "":
		return "killed by " + a.lastSignal
	case a.lastExit != nil:
		return fmt.Sprintf("exited with code %d", *a.lastExit)
	}
	return ""
}

// ViewerOptions say how a viewer attaches.
type ViewerOptions struct {
	// ReadOnly viewers never write or resize.
	ReadOnly bool
	// Cols, Rows: the viewer's terminal. A viewer that may write resizes
	// the PTY to it first (the latest writer's size wins), never below the
	// run's configured size; 0 keeps the size.
	Cols, Rows int
	// Masked viewers never get the program's bytes: each read is a repaint
	// of the screen as `screen` shows it, secrets masked by Masker (nil
	// masks the credential shapes only), taken when the screen changed
	// (masked.go).
	Masked bool
	Masker *mask.Masker
}

// Attach adds a viewer of the harness's terminal: its first reads are an
// AttachAttached notice and a repaint of the current screen, then live
// output. A harness that is stopped or failed answers ErrNotRunning; an
// upstream invalid_argument.
func (u *Unit) Attach(ctx context.Context, o ViewerOptions) (*Viewer, error) {
	if u.out == nil {
		return nil, fmt.Errorf("supervise: unit %s: attach: an upstream has no terminal: %w", u.name, errcode.ErrInvalidArgument)
	}
	if !o.ReadOnly && o.Cols > 0 && o.Rows > 0 {
		cols, rows := clampSize(o.Cols, o.Rows)
		// Between runs there is no PTY to resize; the viewer is still welcome.
		if err := u.viewerResize(ctx, cols, rows); err != nil && !isNotRunning(err) {
			return nil, fmt.Errorf("supervise: unit %s: attach: %w", u.name, err)
		}
	}
	f := u.out
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live {
		return nil, fmt.Errorf("supervise: unit %s: attach: %w", u.name, ErrNotRunning)
	}
	v := &Viewer{u: u, f: f, readOnly: o.ReadOnly, run: f.run, wake: make(chan struct{}, 1)}
	if o.Masked {
		v.masked = &maskedView{m: o.Masker}
	}
	snap := f.t.Snapshot(term.SnapshotOptions{ANSI: true})
	v.pushEventLocked(api.AttachEvent{Kind: api.AttachAttached, Name: u.name, RunID: f.run, State: f.state,
		Cols: snap.Cols, Rows: snap.Rows})
	v.pushOutputLocked([]byte(repaint(snap, f.t.BracketedPaste())))
	f.viewers[v] = struct{}{}
	return v, nil
}

// repaint is what a late viewer's terminal needs to show the screen: the
// program's screen (alternate or main) and paste mode, then the emulator's
// repaint with colours and cursor.
func repaint(s term.Snapshot, paste bool) string {
	var modes string
	if s.AltScreen {
		modes += "\x1b[?1049h"
	}
	if paste {
		modes += "\x1b[?2004h"
	}
	return modes + s.Repaint()
}

// clampSize bounds a viewer's size to what the terminal accepts, so a tiny
// or huge window still attaches.
func clampSize(cols, rows int) (uint16, uint16) {
	c, r := term.ClampSize(cols, rows)
	return uint16(c), uint16(r)
}

func isNotRunning(err error) bool { return errors.Is(err, ErrNotRunning) }

// Viewer is one attached viewer of a harness's terminal. Next is for one
// goroutine; Input and Resize may be called from another.
type Viewer struct {
	u        *Unit
	f        *fanout
	readOnly bool
	wake     chan struct{} // capacity 1: something was queued
	masked   *maskedView   // nil: the program's bytes as they come

	// guarded by f.mu
	queue   []viewItem
	pending int    // output bytes queued
	lagging bool   // output was dropped: repaint at the next read
	closed  bool   // Close was called, or the AttachEnded notice was read
	run     uint64 // the run this viewer has been told of
}

// viewItem is output or a notice, in stream order.
type viewItem struct {
	out []byte
	ev  *api.AttachEvent
}

func (v *Viewer) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

func (v *Viewer) pushEventLocked(ev api.AttachEvent) {
	v.queue = append(v.queue, viewItem{ev: &ev})
	v.signal()
}

// pushOutputLocked queues output, or starts lagging when the queue would
// pass the bound (MaxViewerLag): queued output is dropped (notices stay) and the next
// read repaints.
func (v *Viewer) pushOutputLocked(p []byte) {
	if v.lagging || len(p) == 0 {
		return
	}
	if v.masked != nil {
		// The bytes are not passed on: the next read repaints.
		v.masked.dirty = true
		v.signal()
		return
	}
	if v.pending+len(p) > v.f.maxLag {
		kept := v.queue[:0]
		for _, it := range v.queue {
			if it.ev != nil {
				kept = append(kept, it)
			}
		}
		clear(v.queue[len(kept):])
		v.queue, v.pending, v.lagging = kept, 0, true
		v.signal()
		return
	}
	v.pending += len(p)
	if n := len(v.queue); n > 0 && v.queue[n-1].ev == nil {
		v.queue[n-1].out = append(v.queue[n-1].out, p...)
	} else {
		v.queue = append(v.queue, viewItem{out: append([]byte(nil), p...)})
	}
	v.signal()
}

// Next returns the next output (a repaint after a lag) or notice, waiting
// for one until ctx ends. After the AttachEnded notice, or after Close, it
// returns io.EOF.
func (v *Viewer) Next(ctx context.Context) ([]byte, *api.AttachEvent, error) {
	for {
		if err := v.pace(ctx); err != nil {
			return nil, nil, err
		}
		out, ev, ok, err := v.take()
		if ok || err != nil {
			return out, ev, err
		}
		select {
		case <-v.wake:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// take pops what Next returns, if anything is due.
func (v *Viewer) take() (out []byte, ev *api.AttachEvent, ok bool, err error) {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	if v.closed {
		return nil, nil, false, io.EOF
	}
	// While lagging only notices are queued: they come before the repaint
	// (which shows the run they announce), the end after it.
	if len(v.queue) > 0 && (!v.lagging || v.queue[0].ev.Kind != api.AttachEnded) {
		it := v.queue[0]
		v.queue[0] = viewItem{}
		v.queue = v.queue[1:]
		if it.ev != nil {
			if it.ev.Kind == api.AttachEnded {
				v.closed = true
			}
			return nil, it.ev, true, nil
		}
		v.pending -= len(it.out)
		return it.out, nil, true, nil
	}
	if v.masked != nil && v.masked.dirty {
		return v.masked.repaintLocked(v.f.t), nil, true, nil
	}
	if v.lagging {
		v.lagging = false
		snap := v.f.t.Snapshot(term.SnapshotOptions{ANSI: true})
		return []byte(repaint(snap, v.f.t.BracketedPaste())), nil, true, nil
	}
	return nil, nil, false, nil
}

// Input types p into the harness, as Unit.Input; a read-only viewer is
// refused with not_permitted.
func (v *Viewer) Input(ctx context.Context, p []byte) error {
	if v.readOnly {
		return fmt.Errorf("supervise: unit %s: a read-only viewer cannot type: %w", v.u.name, errcode.ErrNotPermitted)
	}
	_, err := v.u.Input(ctx, p)
	return err
}

// Resize resizes the PTY to the viewer's terminal (clamped to the
// emulator's bounds), never below the run's configured size: a notice
// with the size in force tells a viewer that asked for another, so it
// can show the screen as the agent draws it. A read-only viewer is
// refused with not_permitted.
func (v *Viewer) Resize(ctx context.Context, cols, rows int) error {
	if v.readOnly {
		return fmt.Errorf("supervise: unit %s: a read-only viewer cannot resize: %w", v.u.name, errcode.ErrNotPermitted)
	}
	c, r := clampSize(cols, rows)
	if err := v.u.viewerResize(ctx, c, r); err != nil {
		return err
	}
	if ac, ar := v.u.term.Size(); ac != cols || ar != rows {
		v.f.mu.Lock()
		defer v.f.mu.Unlock()
		v.pushEventLocked(api.AttachEvent{Kind: api.AttachNotice, Name: v.u.name, Cols: ac, Rows: ar,
			Message: fmt.Sprintf("the terminal stays %dx%d (the harness's size, or the bounds)", ac, ar)})
	}
	return nil
}

// viewerResize is Resize for an attached viewer's terminal.
func (u *Unit) viewerResize(ctx context.Context, cols, rows uint16) error {
	return u.call(ctx, resizeCmd{cols: cols, rows: rows, viewer: true, reply: make(chan error, 1)})
}

// Close detaches the viewer; Next then returns io.EOF.
func (v *Viewer) Close() {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	v.closed = true
	v.queue, v.pending = nil, 0
	delete(v.f.viewers, v)
	v.signal()
}

// Viewers is how many viewers are attached.
func (u *Unit) Viewers() int {
	if u.out == nil {
		return 0
	}
	u.out.mu.Lock()
	defer u.out.mu.Unlock()
	return len(u.out.viewers)
}
