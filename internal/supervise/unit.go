// Package supervise runs one unit (a harness in a PTY, an upstream MCP
// server on pipes, or a remote one whose runs are connections) per actor
// goroutine: the lifecycle of docs/design/lifecycle.md, the restart policy as pure
// functions (policy.go), the spawners (spawn_pty.go, spawn_stdio.go,
// spawn_conn.go), the layered environment and the per-spawn MCP tokens.
//
// All state of a unit is owned by its actor. Methods send a command and
// wait for its reply; process exits and timers come back to the actor as
// events tagged with a generation, so a stale one is recognised and
// dropped. The actor never waits for a process or a delay itself, so a
// stopping unit blocks neither other units nor the control plane.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/term"
)

// ErrClosed is returned by the methods of a Unit after Close.
var ErrClosed = errors.New("supervise: unit closed")

// Unit supervises one harness or upstream.
type Unit struct {
	name   string
	inbox  chan message
	done   chan struct{}
	status atomic.Pointer[Status]
	term   *term.Term // harnesses only
	out    *fanout    // harnesses only: PTY output to the terminal and the attached viewers
	// input is the PTY master of the current run, for Input (harnesses only).
	input atomic.Pointer[ptyInput]
	// agent derives the agent state from the terminal (harnesses only).
	agent *agentTracker
}

// New starts the actor of one unit. The unit begins stopped and not
// enabled; Deps.Log and Deps.Runs must be set.
func New(cfg UnitConfig, deps Deps) *Unit {
	if deps.Log == nil || deps.Runs == nil {
		panic("supervise: New: Deps.Log and Deps.Runs are required")
	}
	deps.Limits = deps.Limits.WithDefaults()
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Rand == nil {
		deps.Rand = rand.Float64
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Tokens == nil {
		deps.Tokens = NewTokens()
	}
	if deps.BaseEnv == nil {
		deps.BaseEnv = os.Environ()
	}
	if deps.OnEvent == nil {
		deps.OnEvent = func(Event) {}
	}
	deps.Logger = deps.Logger.With(logkey.Unit, cfg.Name)
	u := &Unit{name: cfg.Name, inbox: make(chan message, 16), done: make(chan struct{})}
	if cfg.Kind != KindUpstream {
		u.agent = newAgentTracker(u, cfg, deps)
		u.term = newTerm(u, cfg, deps)
		u.out = newFanout(cfg.Name, u.term)
	}
	a := &actor{u: u, cfg: cfg.clone(), deps: deps, state: StateStopped}
	a.own = newOwner(a)
	a.publish()
	go a.loop()
	return u
}

// Commands sent by the methods; reply carries the result.
type (
	startCmd struct {
		cause   runs.Cause
		restart bool     // Restart: stop first when active, start even when active
		env     []string // StartWith: KEY=VALUE for this run only
		fresh   bool     // RestartFresh: the next run starts a new conversation
		reply   chan error
	}
	stopCmd   struct{ reply chan error }
	closeCmd  struct{ reply chan error }
	updateCmd struct {
		cfg   UnitConfig
		reply chan error
	}
)

// Start spawns the unit from stopped or failed (clearing a latched
// failed) and sets enabled. It is idempotent: a unit that runs or waits
// for a policy restart is left alone and nil returned. A spawn failure is
// returned (and recorded in Status.LastError).
func (u *Unit) Start(ctx context.Context, cause runs.Cause) error {
	return u.call(ctx, startCmd{cause: cause, reply: make(chan error, 1)})
}

// StartWith is Start with env (KEY=VALUE, after every other variable)
// given to the run it starts and to the policy's restarts of it, until
// the next explicit start.
func (u *Unit) StartWith(ctx context.Context, cause runs.Cause, env []string) error {
	return u.call(ctx, startCmd{cause: cause, env: env, reply: make(chan error, 1)})
}

// Stop clears enabled and ends the unit's process tree: for a harness
// SIGTERM to the tree and SIGKILL after the stop grace; for an upstream its
// stdin is closed first, SIGTERM follows after half the grace and SIGKILL
// after the whole. It returns once the unit is stopped or ctx is done (the
// stop goes on regardless). Stopping a unit without a process is a no-op.
func (u *Unit) Stop(ctx context.Context) error {
	return u.call(ctx, stopCmd{reply: make(chan error, 1)})
}

// Restart stops the unit when it is active and starts it again with cause,
// clearing a latched failed and the crash history.
func (u *Unit) Restart(ctx context.Context, cause runs.Cause) error {
	return u.call(ctx, startCmd{cause: cause, restart: true, reply: make(chan error, 1)})
}

// Update replaces the unit's config. The restart policy, restart delay
// and stop grace apply at once; what changes the spawned process applies
// at the next (re)start and sets Status.ConfigChanged while the old
// process runs.
func (u *Unit) Update(cfg UnitConfig) {
	if err := u.call(context.Background(), updateCmd{cfg: cfg.clone(), reply: make(chan error, 1)}); err != nil {
		slog.Default().Debug("supervise: update after close", logkey.Unit, u.name, logkey.Err, err)
	}
}

// Started reports whether run became ready, for a unit with
// Deps.AwaitReady (the broker calls it once an upstream's initialize
// completed, or failed or timed out). A failure ends the run and counts
// as a failed start; until success the run is not healthy. Reports for
// another run than the current one are ignored. It never blocks for long.
func (u *Unit) Started(run uint64, err error) {
	u.post(readyEv{run: run, err: err})
}

// Close stops the unit and ends its actor. Later calls return ErrClosed.
func (u *Unit) Close(ctx context.Context) error {
	err := u.call(ctx, closeCmd{reply: make(chan error, 1)})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Done is closed when the actor has ended after Close.
func (u *Unit) Done() <-chan struct{} { return u.done }

// Name returns the unit's name.
func (u *Unit) Name() string { return u.name }

// Status returns the latest snapshot without waiting for the actor.
func (u *Unit) Status() Status {
	s := *u.status.Load()
	if s.LastExitCode != nil {
		c := *s.LastExitCode
		s.LastExitCode = &c
	}
	return s
}

// StatusSnapshot returns the published snapshot itself, not a copy: the
// same pointer until the actor publishes the next one, so a reader can key
// a cache on it (control's list rows). It is shared with every reader:
// never modify it or what it points to (Status is the copy to keep).
func (u *Unit) StatusSnapshot() *Status { return u.status.Load() }

// call delivers a command and waits for its reply.
func (u *Unit) call(ctx context.Context, c command) error {
	reply := c.replyTo()
	select {
	case u.inbox <- c:
	case <-u.done:
		return fmt.Errorf("supervise: unit %s: %w", u.name, ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("supervise: unit %s: %w", u.name, ctx.Err())
	}
	select {
	case err := <-reply:
		return err
	case <-u.done:
		// The actor answers every pending command before it ends.
		select {
		case err := <-reply:
			return err
		default:
			return fmt.Errorf("supervise: unit %s: %w", u.name, ErrClosed)
		}
	case <-ctx.Done():
		return fmt.Errorf("supervise: unit %s: %w", u.name, ctx.Err())
	}
}

// post delivers an event from a waiter or timer; after the actor ended it
// is dropped (the actor only ends once no process is left).
func (u *Unit) post(ev message) {
	select {
	case u.inbox <- ev:
	case <-u.done:
	}
}
