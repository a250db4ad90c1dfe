package supervise

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
)

// proc is one live run: a spawned main process and what belongs to it,
// or (conn) a connection of a remote upstream (spawn_conn.go).
type proc struct {
	gen       uint64
	cfg       UnitConfig // the config it was spawned from
	own       owner      // ends the run: the actor's owner, or connOwner
	conn      bool       // a connection, not a process: no pid, no tree
	cmd       *exec.Cmd
	pid       int
	run       uint64
	marker    string
	startedAt time.Time
	stopping  bool
	// sigMu orders group signals against the reap of the main process:
	// signalGroup holds it across its check and its kill, the waiter while
	// it sets waited, before the Wait that reaps.
	sigMu  sync.Mutex
	waited bool // guarded by sigMu: the main process exited and is being reaped
	// exited is a proctree.StartMark between the main process's exit and
	// its reap (fallback mode; 0 when unknown), for proctree.Kill. Set by
	// the waiter before the exit event.
	exited uint64
	// mainExited: the main process ended but the run goes on (cgroup mode:
	// its cgroup still holds processes).
	mainExited bool
	// readyAt is when the run became ready: at spawn, or for a unit with
	// Deps.AwaitReady when Started reported success. Zero until then.
	readyAt time.Time
	// startFailed: Started reported that the run never became ready.
	startFailed bool

	cg  *cgroup.Group // cgroup mode: the run's leaf
	sbx *SandboxRun   // the run's sandbox; nil when unconfined
	// abandon is closed when the wait for an empty cgroup gives up (a
	// process survived cgroup.kill).
	abandon      chan struct{}
	abandonTimer *time.Timer

	stdin      io.Closer // upstream: our end of its stdin
	master     *os.File  // harness: the PTY master
	cols, rows uint16    // harness: the PTY size now
	// ioDone is closed when the output reader (if any) has finished.
	ioDone chan struct{}

	termTimer, killTimer, healthyTimer, timeoutTimer *time.Timer

	// outcome and note are set when the run is ended on purpose (a stop,
	// its timeout, EndRun) and recorded when it exits.
	outcome api.RunOutcome
	note    string
	// jobOut captures a job run's output for its adapter (agentrun.go).
	jobOut *capture
	// jobLines reads a job run's output lines as they come (agentrun.go).
	jobLines *lineWriter
}

func (p *proc) stopTimers() {
	for _, t := range []*time.Timer{p.termTimer, p.killTimer, p.healthyTimer, p.abandonTimer, p.timeoutTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

// abandonAfter closes p.abandon after d unless the run ends first. Only
// the actor calls it.
func (p *proc) abandonAfter(d time.Duration) {
	if p.abandonTimer != nil {
		return
	}
	ch := p.abandon
	p.abandonTimer = time.AfterFunc(d, func() { close(ch) })
}

// closeIO releases the parent's ends of the run's I/O; the output reader
// then ends.
func (p *proc) closeIO(logger *slog.Logger) {
	p.closeSandbox()
	if p.stdin != nil {
		if err := p.stdin.Close(); err != nil {
			logger.Debug("supervise: close stdin", logkey.Run, p.run, logkey.Err, err)
		}
	}
	if p.master != nil {
		if err := p.master.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			logger.Warn("supervise: close pty master", logkey.Run, p.run, logkey.Err, err)
		}
	}
}

// spawn starts a new run with cause. Every failure goes through the
// policy (a failed attempt) and is returned.
func (a *actor) spawn(cause runs.Cause) error {
	if a.cfg.URL != "" {
		return a.spawnConn(cause)
	}
	cfg := a.cfg.clone()
	cfg.ExtraEnv = append(cfg.ExtraEnv, a.runEnv...)
	cmd, fileEnv, err := prepare(cfg)
	if err != nil {
		a.setState(StateStarting)
		return a.spawnFailed(a.errSpawn(err))
	}
	if a.deps.OnSecrets != nil && len(fileEnv) > 0 {
		vals := make([]string, 0, len(fileEnv))
		for _, kv := range fileEnv {
			if _, v, ok := strings.Cut(kv, "="); ok {
				vals = append(vals, v)
			}
		}
		a.deps.OnSecrets(vals) // masked before the program can print them
	}
	run, err := a.deps.Runs.Begin(cfg.Name, cause)
	if err != nil {
		a.setState(StateStarting)
		return a.spawnFailed(a.errSpawn(fmt.Errorf("begin run: %w", err)))
	}
	// The run is published with starting, before anything can print: an
	// event (state, or busy/idle from the terminal, which reads the
	// snapshot) never carries the previous run or none.
	a.runID = run.ID
	a.setState(StateStarting)
	a.publish() // the state may have been starting already (a restart)
	if a.u.term != nil {
		a.u.term.Flush() // lines of the previous run stay with it
	}
	a.deps.Log.SetRun(run.ID)

	a.gen++
	p := &proc{gen: a.gen, cfg: cfg, own: a.own, cmd: cmd, run: run.ID, ioDone: make(chan struct{}), abandon: make(chan struct{})}
	p.marker = proctree.NewMarker(a.deps.Instance, cfg.Name, run.ID)
	env := spawnEnv{cfg: cfg, base: a.deps.BaseEnv, marker: p.marker, fileEnv: fileEnv}
	if cfg.Kind != KindUpstream {
		env.token = a.deps.Tokens.Mint(cfg.Name, run.ID)
	}
	cmd.Env = env.build()
	cmd.WaitDelay = a.deps.Limits.WaitDelay

	var onStarted func()
	attrs := proctree.SysProcAttr()
	err = a.addAgentArgs(p, cmd)
	if err == nil {
		err = a.sandboxSpawn(p, cmd, attrs) // after the args: it wraps the whole command
	}
	if err == nil {
		err = a.own.place(p, attrs)
	}
	if err == nil {
		if cfg.Kind == KindUpstream {
			onStarted, err = a.startStdio(p, attrs)
		} else {
			onStarted, err = a.startPTY(p, attrs)
		}
		a.own.started(p, err)
		a.sandboxStarted(p, err)
	}
	if err != nil {
		if p.sbx != nil && p.sbx.wrapped != nil {
			p.sbx.wrapped.Close()
		}
		a.deps.Tokens.Revoke(cfg.Name, run.ID)
		if endErr := a.deps.Runs.Finish(run.ID, runs.Ending{Outcome: api.RunFailed, Note: err.Error()}); endErr != nil {
			a.deps.Logger.Error("supervise: end run", logkey.Run, run.ID, logkey.Err, endErr)
		}
		return a.spawnFailed(a.errSpawn(err))
	}
	p.startedAt = a.deps.Now()
	if !a.deps.AwaitReady {
		p.readyAt = p.startedAt
	}
	a.proc = p
	a.lastErr = ""

	if a.deps.Ledger != nil {
		entry, err := proctree.NewEntry(cfg.Name, p.pid, p.marker, a.deps.Instance)
		if err == nil {
			err = a.deps.Ledger.Add(entry)
		}
		if err != nil {
			// The tree is still ours and found by its marker; only a crash
			// of the daemon would miss it, so go on loudly.
			a.deps.Logger.Error("supervise: ledger add", logkey.Run, run.ID, logkey.Err, err)
		}
	}
	if err := a.deps.Runs.SetPID(run.ID, p.pid); err != nil {
		a.deps.Logger.Error("supervise: record pid", logkey.Run, run.ID, logkey.Err, err)
	}
	a.deps.Log.Event(run.ID, fmt.Sprintf("spawned pid %d", p.pid))
	a.deps.Logger.Info("supervise: spawned", logkey.Run, run.ID, logkey.PID, p.pid, logkey.Cause, cause)
	go a.wait(p)
	if cfg.Timeout > 0 {
		p.timeoutTimer = a.arm(cfg.Timeout, p.gen, timerTimeout)
	}
	if !a.deps.AwaitReady {
		p.healthyTimer = a.arm(a.deps.Limits.HealthyAfter, p.gen, timerHealthy)
	}
	// Run, pid and state are published before the output reader starts
	// (onStarted), so whatever the output causes sees this run.
	a.setState(a.upState())
	a.publish()
	if onStarted != nil {
		onStarted()
	}
	return nil
}

// prepare checks what can be checked before a run is recorded: the
// working directory, the env_file and the executable.
func prepare(cfg UnitConfig) (*exec.Cmd, []string, error) {
	if cfg.Cmd == "" {
		return nil, nil, errors.New("empty command")
	}
	if cfg.Dir != "" {
		st, err := os.Stat(cfg.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("workdir: %w", err)
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("workdir %s: not a directory", cfg.Dir)
		}
	}
	var fileEnv []string
	if cfg.EnvFile != "" {
		var err error
		if fileEnv, err = ParseEnvFile(cfg.EnvFile); err != nil {
			return nil, nil, err
		}
	}
	cmd := exec.Command(cfg.Cmd, cfg.Args...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("command: %w", cmd.Err)
	}
	cmd.Dir = cfg.Dir
	return cmd, fileEnv, nil
}

// startProcess runs start under the reaper (when there is one), so the
// orphan reaper never steals the child's exit status.
func (a *actor) startProcess(p *proc, start func() error) error {
	if g := p.cg; g != nil {
		fork := start
		start = func() error { return g.Start(fork) } // into its cgroup v1 leaves too
	}
	startPID := func() (int, error) {
		if err := start(); err != nil {
			return 0, err
		}
		return p.cmd.Process.Pid, nil
	}
	var err error
	if a.deps.Reaper != nil {
		p.pid, err = a.deps.Reaper.Spawn(startPID)
	} else {
		p.pid, err = startPID()
	}
	return err
}

// wait is the waiter goroutine of one run: it waits for the main process
// and, in cgroup mode, for the run's last process, gives its output a
// bounded moment to drain and reports the exit.
func (a *actor) wait(p *proc) {
	// Wait for the exit without reaping first: until the Wait below reaps
	// it, the main process is a zombie whose id still names its group and
	// session, so no group signal can reach a stranger that took the
	// number (pid_max may be 32768, and the daemon may run as root).
	if err := proctree.WaitExit(p.pid); err != nil {
		a.deps.Logger.Warn("supervise: wait for the main process without reaping", logkey.Run, p.run, logkey.PID, p.pid, logkey.Err, err)
	} else if p.cg == nil {
		p.exited = proctree.StartMark()
	}
	p.sigMu.Lock()
	p.waited = true
	p.sigMu.Unlock()
	err := p.cmd.Wait()
	if a.deps.Reaper != nil {
		// Wait has reaped the pid already; unregistering it can wait for a
		// reaper pass, so do it after the exit is reported.
		defer a.deps.Reaper.Release(p.pid)
	}
	a.own.settle(p)
	drain := time.NewTimer(a.deps.Limits.OutputDrain)
	select {
	case <-p.ioDone:
	case <-drain.C: // a descendant still holds the output open; reapTree ends it
	}
	drain.Stop()
	ev := exitEv{gen: p.gen, job: readJob(p)}
	if p.cg != nil {
		ev.oom = p.cg.OOMKills() > 0
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		ev.err = err
	}
	if ps := p.cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ev.signal = unix.SignalName(ws.Signal())
			if ev.signal == "" {
				ev.signal = ws.Signal().String()
			}
		} else {
			c := ps.ExitCode()
			ev.code = &c
		}
	}
	a.u.post(ev)
}

// closeOnce makes Close idempotent, since both the broker and the
// supervisor may close an upstream's stdin.
type closeOnce struct {
	io.Writer
	once sync.Once
	c    io.Closer
	err  error
}

func (c *closeOnce) Close() error {
	c.once.Do(func() { c.err = c.c.Close() })
	return c.err
}

// SyscallConn is the pipe's descriptor, when it is a file: the broker
// writes calls to an upstream without waiting on it (jsonl's send).
func (c *closeOnce) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Writer.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func ptySize(cfg UnitConfig) (cols, rows uint16) {
	cols, rows = cfg.Cols, cfg.Rows
	if cols == 0 {
		cols = DefaultCols
	}
	if rows == 0 {
		rows = DefaultRows
	}
	return cols, rows
}

// startedFunc is the readiness report of run for whoever serves it
// (api.UpstreamRun.Started): Unit.Started, bound to this unit and run, so
// the report needs no way back through control.
func (a *actor) startedFunc(run uint64) func(error) {
	u := a.u
	return func(err error) { u.Started(run, err) }
}
