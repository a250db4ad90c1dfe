package supervise

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/creack/pty"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/term"
)

// newTerm builds the terminal of a harness: its lines become the log's
// output entries and its busy/idle changes become EventActivity.
func newTerm(u *Unit, cfg UnitConfig, deps Deps) *term.Term {
	cols, rows := ptySize(cfg)
	log, onEvent, now := deps.Log, deps.OnEvent, deps.Now
	return term.New(term.Options{
		Cols: int(cols), Rows: int(rows), IdleAfter: cfg.IdleAfter, Now: now,
		OnLines: func(lines []string) { log.Output(lines...) },
		OnActivity: func(a term.Activity) {
			// Not on the actor: read the state from the published snapshot.
			st := u.status.Load()
			ev := Event{Kind: EventActivity, Unit: u.name, Activity: string(a.State), Time: a.Since}
			if st != nil {
				ev.State, ev.RunID = string(st.State), st.RunID
			}
			onEvent(ev)
			u.agent.activity(a)
		},
	})
}

// Term returns the terminal of a harness (nil for an upstream): its screen,
// scrollback, activity state and WaitIdle. It outlives runs; each spawn
// starts it on a fresh screen.
func (u *Unit) Term() *term.Term { return u.term }

// ErrNotRunning is returned by what needs the unit's process (Resize) when
// it has none. It carries the not_running wire code, so every layer that
// wraps it answers not_running.
var ErrNotRunning = errcode.Errorf(errcode.NotRunning, "no process")

// resizeCmd changes the PTY size of the running process.
type resizeCmd struct {
	cols, rows uint16
	// viewer: an attached viewer's terminal asks, and the PTY never
	// becomes smaller than the run's configured size for it.
	viewer bool
	reply  chan error
}

// Resize sets the PTY size of the running harness, and its terminal's, as
// an attached viewer's terminal asks. The next spawn takes the configured
// size again. A unit without a process answers not_running, an upstream
// invalid_argument.
func (u *Unit) Resize(ctx context.Context, cols, rows uint16) error {
	return u.call(ctx, resizeCmd{cols: cols, rows: rows, reply: make(chan error, 1)})
}

func (a *actor) onResize(m resizeCmd) {
	switch {
	case a.cfg.Kind == KindUpstream:
		m.reply <- fmt.Errorf("supervise: unit %s: resize: an upstream has no terminal: %w", a.cfg.Name, errcode.ErrInvalidArgument)
		return
	case int(m.cols) < term.MinCols || int(m.cols) > term.MaxCols || int(m.rows) < term.MinRows || int(m.rows) > term.MaxRows:
		m.reply <- fmt.Errorf("supervise: unit %s: resize to %dx%d: want %d..%d columns and %d..%d rows: %w",
			a.cfg.Name, m.cols, m.rows, term.MinCols, term.MaxCols, term.MinRows, term.MaxRows, errcode.ErrInvalidArgument)
		return
	case a.proc == nil || a.proc.master == nil:
		m.reply <- fmt.Errorf("supervise: unit %s: resize: %w", a.cfg.Name, ErrNotRunning)
		return
	}
	p := a.proc
	if m.viewer {
		// A phone's narrow view must not reflow the agent's screen: its
		// dialogs, rewrapped to 56 columns, broke paths in two in what
		// the rules read, and stayed so after the phone left.
		cols, rows := ptySize(p.cfg)
		m.cols, m.rows = max(m.cols, cols), max(m.rows, rows)
	}
	if err := pty.Setsize(p.master, &pty.Winsize{Cols: m.cols, Rows: m.rows}); err != nil {
		m.reply <- fmt.Errorf("supervise: unit %s: resize: %w", a.cfg.Name, err)
		return
	}
	p.cols, p.rows = m.cols, m.rows
	a.u.term.Resize(int(m.cols), int(m.rows))
	a.publish() // before the reply: the caller's next Status has the size
	m.reply <- nil
}

// ptyWriter takes a harness's output: raw bytes into the log (ring, file),
// and into the terminal, which makes the output entries, and to the
// attached viewers. Like logWriter it never fails, so the PTY keeps
// draining.
type ptyWriter struct {
	agent  *agentTracker
	l      *logs.Log
	out    *fanout
	logger *slog.Logger
	once   *sync.Once
}

func newPTYWriter(agent *agentTracker, l *logs.Log, out *fanout, logger *slog.Logger) ptyWriter {
	return ptyWriter{agent: agent, l: l, out: out, logger: logger, once: new(sync.Once)}
}

func (w ptyWriter) Write(p []byte) (int, error) {
	if _, err := w.l.WriteRaw(p); err != nil {
		w.once.Do(func() { w.logger.Warn("supervise: output dropped", logkey.Err, err) })
	}
	w.out.write(p)
	w.agent.output()
	return len(p), nil
}
