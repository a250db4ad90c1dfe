package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// InputTimeout is the default of Limits.InputTimeout, how long one Input
// may take in all: waiting for the writes queued before it and then for
// the program to take its bytes.
// A program that does not read its terminal lets the PTY's input queue
// fill up, and a write to the master then waits for room.
const InputTimeout = 5 * time.Second

// MaxQueuedInputs bounds the writes to one unit's terminal in progress or
// waiting their turn; one more is refused at once. 50 concurrent sends to
// a program that does not read queued without bound, each waiting its
// turn before its own timeout started.
const MaxQueuedInputs = 8

// ErrInputBusy is why Input refuses a write while MaxQueuedInputs others
// are in progress or queued.
var ErrInputBusy = errors.New("supervise: input: too many sends in progress")

// ErrInputTimeout is why Input gave up: the program did not take its
// bytes within Limits.InputTimeout.
var ErrInputTimeout = errors.New("the program did not read its terminal")

// ptyInput is where typing goes while a run lives: its PTY master. The
// actor publishes it when the run starts and withdraws it when the run
// ends; writers use it on their own goroutine, so a program that does not
// read never holds up the actor.
type ptyInput struct {
	run    uint64
	master *os.File
	// queued holds a token per write in progress or waiting (at most
	// MaxQueuedInputs); turn keeps one writer at a time, so a send's text
	// and keys stay together and one writer's deadline is not another's.
	queued chan struct{}
	turn   chan struct{}
	// timeout is Limits.InputTimeout.
	timeout time.Duration
	// log tells of a Typing whose Submit went in before the program was
	// seen to take its Data in (a wait that reached its bound).
	log *slog.Logger
	// wrote is when the last write ended (held by the turn): bytes just
	// written reach the program's queue a moment later (the kernel moves
	// them from the PTY's buffers on a worker), so an empty queue right
	// after a write is looked at again (awaitRead).
	wrote time.Time
}

func newPtyInput(run uint64, master *os.File, timeout time.Duration, log *slog.Logger) *ptyInput {
	return &ptyInput{run: run, master: master, queued: make(chan struct{}, MaxQueuedInputs), turn: make(chan struct{}, 1), timeout: timeout, log: log}
}

// publishInput makes p's master the target of Input.
func (a *actor) publishInput(p *proc) {
	a.u.input.Store(newPtyInput(p.run, p.master, a.deps.Limits.InputTimeout, a.deps.Logger))
}

// withdrawInput ends input to run p (its process exited): later writes
// answer not running instead of reaching a closed master.
func (a *actor) withdrawInput(p *proc) {
	if in := a.u.input.Load(); in != nil && in.run == p.run {
		a.u.input.CompareAndSwap(in, nil)
	}
}

// Input writes p to the PTY of the running harness, as typed keys, and
// returns the run it went to. It runs on the caller's goroutine, never on
// the actor's, and gives up Limits.InputTimeout after it was called (or when ctx
// ends) if the program does not read, the wait for earlier writes
// included. A write that gives up before its turn wrote nothing; one that
// gives up during its turn says exactly how many bytes went in (InputWhole
// avoids that for sends). Over
// MaxQueuedInputs writes at once, Input refuses at once (ErrInputBusy). A
// unit without a process answers ErrNotRunning, an upstream (which has no
// terminal) invalid_argument.
func (u *Unit) Input(ctx context.Context, p []byte) (run uint64, err error) {
	return u.typeIn(ctx, Typing{Data: p}, false)
}

// InputWhole is Input for a send (text and keys an operator or agent
// sends, which must not stop halfway): on Linux it first waits, within the
// same deadline, for the program to have read everything typed before, so
// a send to a program that stopped reading is refused with nothing typed
// rather than cut. Keystrokes of attached viewers use Input: type-ahead to
// a busy program stays queued in its terminal as on any terminal.
func (u *Unit) InputWhole(ctx context.Context, p []byte) (run uint64, err error) {
	return u.Type(ctx, Typing{Data: p})
}

// Typing is one send as written to a harness's terminal (Unit.Type):
// Data, then Submit. Submit goes in the same write unless SubmitAfter is
// set; then it is written on its own once the program has taken Data in:
// it read it and drew after it was written (or DrawWait passed without a
// draw), its processes went quiet (awaitQuiet, at most QuietWait), then
// SubmitAfter passed, and they went quiet again. That is for a program that takes
// an Enter right after a paste as part of the paste until a timer of its
// own has run (agent.Adapter.EnterAfterPaste). Such a send may take
// DrawWait and twice QuietWait longer than Limits.InputTimeout.
type Typing struct {
	Data        []byte
	Submit      []byte
	SubmitAfter time.Duration
}

// Len is how many bytes t types.
func (t Typing) Len() int { return len(t.Data) + len(t.Submit) }

// DrawWait bounds how long a Typing with SubmitAfter waits for the program
// to draw after its Data: one that takes text without drawing it (a
// dialog ignoring a paste) gets its Submit this long after the text.
const DrawWait = 2 * time.Second

// Type is InputWhole for a send that may need its Enter written apart
// (Typing). The whole send holds the terminal's turn: no other send's
// bytes come between its text and its Enter. It runs on the caller's
// goroutine and gives up, as InputWhole does, Limits.InputTimeout after it
// was called or when ctx ends, saying how many bytes went in.
func (u *Unit) Type(ctx context.Context, t Typing) (run uint64, err error) {
	return u.typeIn(ctx, t, true)
}

func (u *Unit) typeIn(ctx context.Context, t Typing, whole bool) (run uint64, err error) {
	if u.term == nil {
		return 0, fmt.Errorf("supervise: unit %s: input: an upstream has no terminal to type into: %w", u.name, errcode.ErrInvalidArgument)
	}
	in := u.input.Load()
	if in == nil {
		return 0, fmt.Errorf("supervise: unit %s: input: %w", u.name, ErrNotRunning)
	}
	n, ctxBound, err := in.write(ctx, t, whole, u.term.Output)
	total := t.Len()
	switch {
	case err == nil:
		return in.run, nil
	case errors.Is(err, ErrInputBusy):
		return in.run, fmt.Errorf("supervise: unit %s: %d sends are already in progress or waiting for the program to read its terminal; nothing was written: %w",
			u.name, MaxQueuedInputs, ErrInputBusy)
	case errors.Is(err, os.ErrClosed):
		// The run ended while we wrote.
		return in.run, fmt.Errorf("supervise: unit %s: input: run %d ended (%d of %d bytes written): %w", u.name, in.run, n, total, ErrNotRunning)
	case ctxBound && errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
		// The caller's deadline or cancellation, not the program's silence.
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded // the file's timer fired a moment before ctx's
		}
		return in.run, fmt.Errorf("supervise: unit %s: input: %d of %d bytes written: %w", u.name, n, total, cause)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return in.run, fmt.Errorf("supervise: unit %s: input: %w within %s (%d of %d bytes written)",
			u.name, ErrInputTimeout, in.timeout, n, total)
	}
	return in.run, fmt.Errorf("supervise: unit %s: input: %d of %d bytes written: %w", u.name, n, total, err)
}

// write writes t whole, bounded by in.timeout from now and by ctx;
// ctxBound says the deadline was ctx's. The wait for its turn counts, and
// so does the wait between t's Data and its Submit; output is the
// terminal's Output.
func (in *ptyInput) write(ctx context.Context, t Typing, whole bool, output func() <-chan struct{}) (n int, ctxBound bool, err error) {
	deadline := time.Now().Add(in.timeout)
	if t.SubmitAfter > 0 {
		deadline = deadline.Add(DrawWait + 2*QuietWait) // the waits before its Submit
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxBound = d, true
	}
	select {
	case in.queued <- struct{}{}:
		defer func() { <-in.queued }()
	default:
		return 0, ctxBound, ErrInputBusy
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case in.turn <- struct{}{}:
		defer func() { <-in.turn }()
	case <-wait.C:
		return 0, ctxBound, os.ErrDeadlineExceeded
	case <-ctx.Done():
		return 0, ctxBound, ctx.Err()
	}
	// Typed whole or not at all: a program that has not read what was
	// typed before may not read this either, and a write it stops taking
	// halfway leaves half a send in its input. So the send waits, within
	// its deadline, until the program has read everything before it. An
	// empty PTY input queue takes at least 4 KiB without the program
	// reading (Linux: the line discipline's buffer; with the flip buffers
	// 13-20 KiB were measured, depending on the writes), so a send up to
	// that is typed whole even to a program that never reads again; a
	// longer one can still stop halfway if the program stops reading
	// during it, and the answer then says how much went in.
	if whole {
		if err := in.awaitRead(ctx, deadline); err != nil {
			return 0, ctxBound, err
		}
	}
	if t.SubmitAfter <= 0 || len(t.Submit) == 0 {
		n, err = in.writeNow(ctx, slices.Concat(t.Data, t.Submit), deadline)
		return n, ctxBound, err
	}
	drawn := output() // before the write: its draw may come at once
	n, err = in.writeNow(ctx, t.Data, deadline)
	if err != nil {
		return n, ctxBound, err
	}
	if err := in.awaitTaken(ctx, drawn, t.SubmitAfter, deadline); err != nil {
		return n, ctxBound, err
	}
	m, err := in.writeNow(ctx, t.Submit, deadline)
	return n + m, ctxBound, err
}

// writeNow writes p to the master, by deadline or ctx's end.
func (in *ptyInput) writeNow(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	if err := in.master.SetWriteDeadline(deadline); err != nil {
		// A master that could not be made non-blocking (see pollable)
		// takes no deadline; the write is then unbounded, which the spawn
		// already logged.
		if !errors.Is(err, os.ErrNoDeadline) {
			return 0, err
		}
	}
	// Cancelling ctx moves the deadline into the past, which ends a write
	// parked in the poller. The next writer sets its own deadline only
	// after this one's cancellation has landed.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = in.master.SetWriteDeadline(time.Unix(1, 0))
	})
	n, err := in.master.Write(p)
	in.wrote = time.Now()
	if !stop() {
		<-fired
	}
	return n, err
}

// awaitTaken waits until the program has taken in what was just written:
// it read it and drew after the write (drawn is closed; or DrawWait
// passed without a draw), it went quiet (it handled what it read), pause
// passed since, and it went quiet again (its timer ran, and what that set
// off). The deadline and ctx bound it.
func (in *ptyInput) awaitTaken(ctx context.Context, drawn <-chan struct{}, pause time.Duration, deadline time.Time) error {
	if err := in.awaitRead(ctx, deadline); err != nil {
		return err
	}
	if err := sleepUntil(ctx, drawn, in.wrote.Add(DrawWait), deadline); err != nil {
		return err
	}
	select {
	case <-drawn:
	default:
		in.log.Info("supervise: the program drew nothing after a paste; its Enter follows", logkey.Run, in.run, logkey.Waited, DrawWait)
	}
	// A draw is not the end of the program's work on the paste (the draw
	// may even be another one, a spinner's): only once it has gone quiet
	// has it handled what it read, and only then does its timer start.
	if err := in.awaitQuiet(ctx, deadline); err != nil {
		return err
	}
	if err := sleepUntil(ctx, nil, time.Now().Add(pause), deadline); err != nil {
		return err
	}
	return in.awaitQuiet(ctx, deadline)
}

// QuietWait bounds how long a Typing with SubmitAfter waits, after its
// pause, for the program to go quiet: one that never does (a process of
// its terminal's foreground group that keeps running) gets its Submit
// then. Gemini CLI just after its restart for a trusted folder kept its
// event loop busy for 0.8 s at load 4 on 2 cores, and longer as the load
// grew: with a 5 s bound, 1 of 5 first prompts after that restart was
// still taken for a newline at load 11.
const QuietWait = 10 * time.Second

// quietFor is how long every thread of the program must have slept,
// never scheduled, to count as quiet; also how often it is looked at.
const quietFor = 5 * time.Millisecond

// awaitQuiet waits until the main threads of the processes of the
// terminal's foreground group have slept, unscheduled, for quietFor: the
// program has done all the work its input and its due timers gave it and
// waits for more. An event loop (Node's, on its main thread) does not
// sleep while a timer is due or a callback is queued. Where it cannot be
// told (not Linux) it does not wait.
func (in *ptyInput) awaitQuiet(ctx context.Context, deadline time.Time) error {
	giveUp := time.Now().Add(QuietWait)
	prev, ok := sampleQuiet(in.master)
	for ok {
		if !time.Now().Before(giveUp) {
			in.log.Warn("supervise: the program stayed busy after a paste; its Enter follows anyway", logkey.Run, in.run, logkey.Waited, QuietWait)
			return nil
		}
		if err := sleepUntil(ctx, nil, time.Now().Add(quietFor), deadline); err != nil {
			return err
		}
		var s quietSample
		if s, ok = sampleQuiet(in.master); ok && prev.asleep && s.asleep && s.runs == prev.runs {
			return nil
		}
		prev = s
	}
	return nil
}

// sleepUntil returns when done is closed or at until, whichever comes
// first; os.ErrDeadlineExceeded when deadline comes before either, ctx's
// error when it ends first.
func sleepUntil(ctx context.Context, done <-chan struct{}, until, deadline time.Time) error {
	end := until
	if deadline.Before(end) {
		end = deadline
	}
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		if until.After(deadline) {
			return os.ErrDeadlineExceeded
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settle is how long after a write an empty input queue is not yet taken
// for "all read": the written bytes may still be on their way into it.
const settle = 5 * time.Millisecond

// readPoll is how often a send waiting for the program to read what was
// typed before looks again: the kernel has no event for it.
const readPoll = 20 * time.Millisecond

// awaitRead waits until the program has read every byte typed before
// (unreadInput is 0), the deadline, or ctx's end; where the queue cannot
// be seen it does not wait.
func (in *ptyInput) awaitRead(ctx context.Context, deadline time.Time) error {
	for {
		n, ok := unreadInput(in.master)
		settling := time.Since(in.wrote) < settle
		if !ok || n == 0 && !settling {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		next := readPoll
		if n == 0 {
			next = time.Millisecond
		}
		t := time.NewTimer(min(next, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
