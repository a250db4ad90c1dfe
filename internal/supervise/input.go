package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
)

// InputTimeout bounds how long one Input waits for the program to take its
// bytes. A program that does not read its terminal lets the PTY's input
// queue fill up, and a write to the master then waits for room.
const InputTimeout = 5 * time.Second

// ptyInput is where typing goes while a run lives: its PTY master. The
// actor publishes it when the run starts and withdraws it when the run
// ends; writers use it on their own goroutine, so a program that does not
// read never holds up the actor.
type ptyInput struct {
	run    uint64
	master *os.File
	// mu keeps one writer at a time: a send's text and keys stay together,
	// and one writer's deadline is not another's.
	mu sync.Mutex
}

// publishInput makes p's master the target of Input.
func (a *actor) publishInput(p *proc) {
	a.u.input.Store(&ptyInput{run: p.run, master: p.master})
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
// the actor's, and gives up after InputTimeout (or when ctx ends) if the
// program does not read. A unit without a process answers ErrNotRunning,
// an upstream (which has no terminal) invalid_argument.
func (u *Unit) Input(ctx context.Context, p []byte) (run uint64, err error) {
	if u.term == nil {
		return 0, fmt.Errorf("supervise: unit %s: input: an upstream has no terminal to type into: %w", u.name, errcode.ErrInvalidArgument)
	}
	in := u.input.Load()
	if in == nil {
		return 0, fmt.Errorf("supervise: unit %s: input: %w", u.name, ErrNotRunning)
	}
	n, ctxBound, err := in.write(ctx, p)
	switch {
	case err == nil:
		return in.run, nil
	case errors.Is(err, os.ErrClosed):
		// The run ended while we wrote.
		return in.run, fmt.Errorf("supervise: unit %s: input: run %d ended: %w", u.name, in.run, ErrNotRunning)
	case ctxBound && errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
		// The caller's deadline or cancellation, not the program's silence.
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded // the file's timer fired a moment before ctx's
		}
		return in.run, fmt.Errorf("supervise: unit %s: input: %d of %d bytes written: %w", u.name, n, len(p), cause)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return in.run, fmt.Errorf("supervise: unit %s: input: the program did not read its terminal within %s (%d of %d bytes written)",
			u.name, InputTimeout, n, len(p))
	}
	return in.run, fmt.Errorf("supervise: unit %s: input: %w", u.name, err)
}

// write writes p whole, bounded by InputTimeout and ctx; ctxBound says
// the deadline was ctx's.
func (in *ptyInput) write(ctx context.Context, p []byte) (n int, ctxBound bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	deadline := time.Now().Add(InputTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxBound = d, true
	}
	if err := in.master.SetWriteDeadline(deadline); err != nil {
		// A master that could not be made non-blocking (see pollable)
		// takes no deadline; the write is then unbounded, which the spawn
		// already logged.
		if !errors.Is(err, os.ErrNoDeadline) {
			return 0, ctxBound, err
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
	n, err = in.master.Write(p)
	if !stop() {
		<-fired
	}
	return n, ctxBound, err
}
