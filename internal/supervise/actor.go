package supervise

import (
	"fmt"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
)

// Events posted back to the actor. gen ties each to the process or timer
// it was created for.
type (
	exitEv struct {
		gen    uint64
		code   *int
		signal string
		err    error // from Wait, beyond the exit status (e.g. WaitDelay)
		// oom: the OOM killer ended a process of the run (its cgroup's
		// oom_kill count), so the run ends with cause oom.
		oom bool
		// conn: a connection run ended, connErr says why (nil: stopped).
		conn    bool
		connErr error
		job     *jobEnd // a job run's result (agentrun.go)
	}
	timerEv struct {
		gen  uint64
		kind timerKind
	}
	// reapedEv says the leftovers of run gen are gone.
	reapedEv struct{ gen uint64 }
	// mainExitEv says the main process of run gen exited while other
	// processes keep the run going (cgroup mode).
	mainExitEv struct{ gen uint64 }
	// readyEv is Unit.Started: run became ready (err nil) or never will.
	readyEv struct {
		run uint64
		err error
	}
)

type timerKind int

const (
	timerRetry   timerKind = iota // a policy restart is due
	timerTerm                     // upstream stop: stdin grace is over, send SIGTERM
	timerKill                     // stop grace is over, send SIGKILL
	timerHealthy                  // the run stayed up long enough to reset the history
	timerTimeout                  // the run's timeout is over
)

// actor owns all state of one unit; only its goroutine touches it.
type actor struct {
	u    *Unit
	cfg  UnitConfig
	deps Deps
	own  owner

	state        State
	enabled      bool
	latched      bool // failed by giving up; only an explicit start clears it
	proc         *proc
	reaping      map[uint64]*proc // exited runs whose leftovers are being killed
	gen          uint64           // last generation handed out (spawns and timers)
	hist         History
	restartCount int
	lastExit     *int
	lastSignal   string
	lastErr      string
	runID        uint64

	retry      *time.Timer
	retryGen   uint64
	nextRetry  time.Time
	stopWait   []chan error
	pendStart  *startCmd // Restart: spawn once the stop finished
	runEnv     []string  // StartWith: for the runs up to the next explicit start
	closeReply chan error
	closing    bool
	ar         agentRunState // sessions of an agent that resumes (agentrun.go)
}

func (a *actor) loop() {
	defer close(a.u.done)
	for m := range a.u.inbox {
		m.handle(a)
		a.publish()
		if a.closing && a.idle() {
			a.finishClose()
			return
		}
	}
}

// message is what the actor's inbox carries: a command from a Unit method
// (a command, with its reply) or an event from a waiter or timer. Each
// type handles itself on the actor, so a new one that lacks its handler
// does not compile, and there is one dispatch: loop's m.handle(a).
type message interface{ handle(a *actor) }

// command is a message a caller waits on (Unit.call): the actor sends
// its result to reply exactly once.
type command interface {
	message
	replyTo() chan error
}

func (m startCmd) handle(a *actor)  { a.onStart(m) }
func (m stopCmd) handle(a *actor)   { a.onStop(m.reply) }
func (m updateCmd) handle(a *actor) { a.onUpdate(m) }
func (m resizeCmd) handle(a *actor) { a.onResize(m) }
func (m endCmd) handle(a *actor)    { a.onEnd(m) }
func (m closeCmd) handle(a *actor) {
	a.closing = true
	a.closeReply = m.reply
	a.onStop(nil)
}

func (m startCmd) replyTo() chan error  { return m.reply }
func (m stopCmd) replyTo() chan error   { return m.reply }
func (m updateCmd) replyTo() chan error { return m.reply }
func (m resizeCmd) replyTo() chan error { return m.reply }
func (m endCmd) replyTo() chan error    { return m.reply }
func (m closeCmd) replyTo() chan error  { return m.reply }

func (m exitEv) handle(a *actor)     { a.onExit(m) }
func (m timerEv) handle(a *actor)    { a.onTimer(m) }
func (m reapedEv) handle(a *actor)   { a.onReaped(m) }
func (m mainExitEv) handle(a *actor) { a.onMainExit(m) }
func (m readyEv) handle(a *actor)    { a.onReady(m) }

// finishClose answers everything still waiting and lets the loop end.
func (a *actor) finishClose() {
	a.cancelRetry()
	a.replyStops(nil)
	if a.pendStart != nil {
		a.pendStart.reply <- fmt.Errorf("supervise: unit %s: %w", a.cfg.Name, ErrClosed)
		a.pendStart = nil
	}
	if a.u.term != nil {
		a.u.term.Close()
		a.u.agent.close()
	}
	a.closeReply <- nil
}

func (a *actor) onStart(m startCmd) {
	if a.closing {
		m.reply <- fmt.Errorf("supervise: unit %s: %w", a.cfg.Name, ErrClosed)
		return
	}
	if m.fresh {
		a.ar.fresh = true
	}
	if a.proc != nil && !a.proc.stopping && !m.restart {
		m.reply <- nil // already running
		return
	}
	if a.proc != nil || a.state == StateStopping {
		// Start once the current process and its leftovers are gone.
		if a.pendStart != nil {
			a.pendStart.reply <- nil // superseded by this request
		}
		a.pendStart = &m
		a.enabled = true
		if a.proc != nil {
			a.beginStop()
		}
		return
	}
	if a.retry != nil && !m.restart {
		m.reply <- nil // a policy restart is already scheduled
		return
	}
	a.runEnv = m.env
	m.reply <- a.explicitStart(m.cause)
}

// explicitStart clears the latch and the crash history and spawns.
func (a *actor) explicitStart(cause runs.Cause) error {
	a.cancelRetry()
	a.latched = false
	a.hist = History{}
	a.restartCount = 0
	a.enabled = true
	return a.spawn(cause)
}

func (a *actor) onStop(reply chan error) {
	a.enabled = false
	if a.pendStart != nil {
		a.pendStart.reply <- fmt.Errorf("supervise: unit %s: start cancelled by stop", a.cfg.Name)
		a.pendStart = nil
	}
	if reply != nil && !a.idle() {
		a.stopWait = append(a.stopWait, reply)
		reply = nil
	}
	switch {
	case a.proc != nil:
		a.beginStop()
	case len(a.reaping) > 0:
		// The last run exited; stopped once its leftovers are gone.
		a.cancelRetry()
		a.setState(StateStopping)
	case a.retry != nil:
		a.cancelRetry()
		a.deps.Log.Event(a.runID, "stopped")
		a.setState(StateStopped)
	}
	if reply != nil {
		reply <- nil
	}
}

// beginStop starts ending the current process without waiting: signals now,
// timers for the next steps.
func (a *actor) beginStop() {
	p := a.proc
	if p.stopping {
		return
	}
	p.stopping = true
	if p.outcome == "" {
		p.outcome = api.RunInterrupted
	}
	a.setState(StateStopping)
	grace := a.stopGrace()
	if p.stdin != nil {
		// An upstream gets the chance to exit on EOF before any signal.
		if err := p.stdin.Close(); err != nil {
			a.deps.Logger.Debug("supervise: close stdin", logkey.Run, p.run, logkey.Err, err)
		}
		p.termTimer = a.arm(grace/2, p.gen, timerTerm)
		p.killTimer = a.arm(grace, p.gen, timerKill)
		return
	}
	p.own.signal(p, syscall.SIGTERM)
	p.killTimer = a.arm(grace, p.gen, timerKill)
}

// stopGrace is the unit's grace between SIGTERM and SIGKILL.
func (a *actor) stopGrace() time.Duration {
	if a.cfg.StopGrace > 0 {
		return a.cfg.StopGrace
	}
	return a.deps.Limits.StopGrace
}

func (a *actor) onUpdate(m updateCmd) {
	name := a.cfg.Name
	a.cfg = m.cfg
	a.cfg.Name = name // a unit never changes its identity
	if a.u.term != nil {
		a.u.term.SetIdleAfter(a.cfg.IdleAfter)
		a.u.agent.setAdapter(a.cfg.Agent)
	}
	a.publish() // config_changed is part of the snapshot
	m.reply <- nil
}

func (a *actor) onTimer(ev timerEv) {
	switch ev.kind {
	case timerRetry:
		if a.retry == nil || ev.gen != a.retryGen {
			return // cancelled or superseded
		}
		a.retry = nil
		a.nextRetry = time.Time{}
		a.restartCount++
		if err := a.spawn(api.CauseRestart); err != nil {
			a.deps.Logger.Warn("supervise: policy restart failed", logkey.Err, err)
		}
	case timerTerm, timerKill, timerHealthy, timerTimeout:
		p := a.proc
		if p == nil || p.gen != ev.gen {
			return // the process it was armed for is gone
		}
		switch ev.kind {
		case timerTerm:
			p.own.signal(p, syscall.SIGTERM)
		case timerKill:
			if p.conn {
				a.deps.Log.Event(p.run, "stop grace over: abandoning the connection")
			} else {
				a.deps.Log.Event(p.run, "stop grace over: sending SIGKILL")
			}
			p.own.signal(p, syscall.SIGKILL)
		case timerTimeout:
			a.onTimeout(p)
		case timerHealthy:
			a.hist = History{}
			if a.state == StateDegraded {
				a.setState(StateRunning)
			}
		}
	}
}

func (a *actor) onExit(ev exitEv) {
	p := a.proc
	if p == nil || ev.gen != p.gen {
		a.deps.Logger.Warn("supervise: stale exit event ignored", logkey.Gen, ev.gen)
		return
	}
	a.proc = nil
	now := a.deps.Now()
	p.stopTimers()
	if ev.err != nil {
		a.deps.Logger.Warn("supervise: wait", logkey.Run, p.run, logkey.PID, p.pid, logkey.Err, ev.err)
	}
	a.deps.Tokens.Revoke(a.cfg.Name, p.run)
	a.withdrawInput(p)
	a.reapTree(p)

	a.lastExit, a.lastSignal = ev.code, ev.signal
	if a.u.term != nil {
		// What the screen still shows belongs to the run: land it before
		// the run ends, since whoever waits on the run (trigger --wait)
		// reads its tail right away.
		a.u.term.Flush()
	}
	end := ending(p, ev.code, ev.signal)
	a.recordJob(p, ev.job, &end)
	endCause := ""
	if ev.oom {
		endCause = api.EndCauseOOM
		end.EndCause = endCause
	}
	if err := a.deps.Runs.Finish(p.run, end); err != nil {
		a.deps.Logger.Error("supervise: end run", logkey.Run, p.run, logkey.Err, err)
	}
	text := "exited"
	switch {
	case ev.conn:
		text = connText(ev.connErr)
		if ev.connErr != nil && !p.startFailed {
			a.lastErr = ev.connErr.Error()
		}
	case ev.signal != "":
		text = "killed by " + ev.signal
	case ev.code != nil:
		text = fmt.Sprintf("exited with code %d", *ev.code)
	}
	if ev.oom {
		text = "oom: " + text + " (the OOM killer ended a process at memory_max)"
	}
	a.deps.Log.Event(p.run, text)
	a.emit(Event{Kind: EventExit, RunID: p.run, ExitCode: ev.code, Signal: ev.signal, Message: text, EndCause: endCause})

	if p.stopping || !a.enabled {
		// Stopped once the leftovers are gone too (onReaped).
		a.setState(StateStopping)
		return
	}
	e := Exit{Code: ev.code, Signal: ev.signal, StartedAt: p.readyAt, At: now,
		StartFailed: p.startFailed || p.readyAt.IsZero()}
	if e.StartFailed {
		text = "never became ready; " + text
	}
	a.applyPolicy(e, text)
}

// reapTree ends whatever of the run's tree outlived its main process, off
// the actor: a /proc scan is slow with many processes, and the kernel needs
// a moment to end what was killed. It posts a reapedEv when all is gone.
func (a *actor) reapTree(p *proc) {
	if a.reaping == nil {
		a.reaping = map[uint64]*proc{}
	}
	a.reaping[p.gen] = p
	go func() {
		if killed := p.own.reap(p); killed > 0 {
			a.deps.Log.Event(p.run, fmt.Sprintf("killed %d leftover processes", killed))
		}
		a.u.post(reapedEv{gen: p.gen})
	}()
}

// onMainExit notes that the main process is gone while the run goes on:
// in cgroup mode a run ends with its last process, so a daemonising child
// keeps it running until it exits or the unit is stopped.
func (a *actor) onMainExit(ev mainExitEv) {
	p := a.proc
	if p == nil || p.gen != ev.gen {
		return
	}
	p.mainExited = true
	a.publish() // before the log line: who reads it sees the run without a pid
	code := "exited"
	if ps := p.cmd.ProcessState; ps != nil {
		code = ps.String()
	}
	a.deps.Log.Event(p.run, fmt.Sprintf("main process %d %s; the run goes on until the last process in its cgroup ends", p.pid, code))
}

// onReady handles Unit.Started. Success starts the healthy timer; failure
// ends the run as a failed start (the process is of no use), which the
// policy counts like a spawn failure.
func (a *actor) onReady(ev readyEv) {
	p := a.proc
	if p == nil || p.run != ev.run || p.stopping || !p.readyAt.IsZero() || p.startFailed {
		return
	}
	if ev.err == nil {
		p.readyAt = a.deps.Now()
		p.healthyTimer = a.arm(a.deps.Limits.HealthyAfter, p.gen, timerHealthy)
		if p.conn {
			// A connection is starting until it is ready (a process is
			// running from its spawn); its last error stands until then.
			a.lastErr = ""
			a.deps.Log.Event(p.run, "connected")
			a.setState(a.upState())
		}
		return
	}
	p.startFailed = true
	a.lastErr = ev.err.Error()
	a.deps.Log.Event(p.run, "start failed: "+ev.err.Error())
	a.deps.Logger.Warn("supervise: start failed", logkey.Run, p.run, logkey.Err, ev.err)
	a.emit(Event{Kind: EventSpawnFailed, RunID: p.run, Message: ev.err.Error()})
	if p.stdin != nil {
		if err := p.stdin.Close(); err != nil {
			a.deps.Logger.Debug("supervise: close stdin", logkey.Run, p.run, logkey.Err, err)
		}
	}
	p.own.signal(p, syscall.SIGTERM)
	p.killTimer = a.arm(a.stopGrace(), p.gen, timerKill)
}

// onReaped finishes a run once its whole tree is gone: the ledger entry
// goes, and a stop (or the restart or close waiting for it) completes.
func (a *actor) onReaped(ev reapedEv) {
	p, ok := a.reaping[ev.gen]
	if !ok {
		a.deps.Logger.Warn("supervise: stale reaped event ignored", logkey.Gen, ev.gen)
		return
	}
	delete(a.reaping, ev.gen)
	if a.deps.Ledger != nil && !p.conn {
		if err := a.deps.Ledger.Remove(p.marker); err != nil {
			a.deps.Logger.Error("supervise: ledger remove", logkey.Run, p.run, logkey.Err, err)
		}
	}
	if !a.idle() || a.state != StateStopping {
		return
	}
	a.deps.Log.Event(p.run, "stopped")
	a.setState(StateStopped)
	a.replyStops(nil)
	if ps := a.pendStart; ps != nil && !a.closing {
		a.pendStart = nil
		a.runEnv = ps.env
		ps.reply <- a.explicitStart(ps.cause)
	}
}

// idle reports whether no process of the unit is left.
func (a *actor) idle() bool { return a.proc == nil && len(a.reaping) == 0 }

// applyPolicy decides what follows an exit (or a spawn failure) of an
// enabled unit; why says what happened, for the failed message.
func (a *actor) applyPolicy(e Exit, why string) {
	d := Decide(a.cfg.Restart, a.hist, e, a.cfg.RestartDelay, a.deps.Limits, a.deps.Rand)
	if d.Restart && a.deps.HoldRestart != nil {
		if why := a.deps.HoldRestart(); why != "" {
			// Held: not a failure of the program, so neither the crash
			// history nor the restart count moves.
			a.deps.Log.Event(a.runID, why+": not restarted until the hold lifts")
			a.deps.Logger.Info("supervise: restart held", logkey.Reason, why)
			a.cancelRetry()
			a.setState(StateStopped)
			return
		}
	}
	a.hist = d.History
	if d.Reason != "" {
		a.deps.Log.Event(a.runID, d.Reason)
		a.deps.Logger.Warn("supervise: "+d.Reason, logkey.State, d.State)
	}
	if d.BecameDegraded {
		a.emit(Event{Kind: EventFlapping, RunID: a.runID, Message: d.Reason})
	}
	if !d.Restart {
		// A suppressed restart clears the intent.
		a.enabled = false
		a.latched = d.Latched
		if d.State == StateStopped {
			a.deps.Log.Event(a.runID, "stopped")
		} else if !d.Latched {
			a.deps.Log.Event(a.runID, "failed: "+why)
		}
		a.setState(d.State)
		return
	}
	a.deps.Log.Event(a.runID, "restarting in "+FormatDuration(d.Delay))
	a.gen++
	a.retryGen = a.gen
	a.nextRetry = a.deps.Now().Add(d.Delay)
	a.retry = a.arm(d.Delay, a.retryGen, timerRetry)
	if a.state == d.State {
		// Degraded stays degraded, but the daemon must still learn that
		// a retry is due and when (upstream_unavailable says so).
		a.emit(Event{Kind: EventState, RunID: a.runID})
		return
	}
	a.setState(d.State)
}

// arm starts a timer that posts a timerEv; it never blocks the actor.
func (a *actor) arm(d time.Duration, gen uint64, kind timerKind) *time.Timer {
	return time.AfterFunc(d, func() { a.u.post(timerEv{gen: gen, kind: kind}) })
}

func (a *actor) cancelRetry() {
	if a.retry != nil {
		a.retry.Stop()
		a.retry = nil
	}
	a.nextRetry = time.Time{}
}

func (a *actor) replyStops(err error) {
	for _, r := range a.stopWait {
		r <- err
	}
	a.stopWait = nil
}

// setState records a transition and tells the daemon.
func (a *actor) setState(s State) {
	if s == a.state {
		return
	}
	a.state = s
	a.tellViewers(s)
	a.emit(Event{Kind: EventState, RunID: a.runID})
}

// emit publishes the snapshot first, so a subscriber reading Status from
// its callback sees the state the event reports.
func (a *actor) emit(ev Event) {
	a.publish()
	ev.Unit = a.cfg.Name
	ev.State = string(a.state)
	ev.Time = a.deps.Now()
	a.deps.OnEvent(ev)
}

// publish stores a fresh immutable snapshot for Status.
func (a *actor) publish() {
	s := &Status{
		Name: a.cfg.Name, Kind: a.cfg.Kind, State: a.state, Enabled: a.enabled,
		RestartCount: a.restartCount, LastSignal: a.lastSignal, RunID: a.runID,
		NextRetry: a.nextRetry, LastError: a.lastErr,
	}
	if a.cfg.Kind != KindUpstream {
		s.Cols, s.Rows = ptySize(a.cfg)
	}
	if p := a.proc; p != nil && p.cols != 0 {
		s.Cols, s.Rows = p.cols, p.rows // the size it runs with, resizes included
	}
	if a.lastExit != nil {
		c := *a.lastExit
		s.LastExitCode = &c
	}
	if p := a.proc; p != nil {
		if !p.mainExited {
			s.PID = p.pid
		}
		s.StartedAt = p.startedAt
		s.ConfigChanged = !spawnEqual(p.cfg, a.cfg)
		s.Cgroup = p.cg
		s.Sandbox = p.sbx
	}
	a.u.status.Store(s)
}

// spawnFailed records a failed spawn and applies the policy to it.
func (a *actor) spawnFailed(err error) error {
	a.lastErr = err.Error()
	a.deps.Logger.Error("supervise: spawn failed", logkey.Err, err)
	a.deps.Log.Event(a.runID, "spawn failed: "+err.Error())
	a.emit(Event{Kind: EventSpawnFailed, RunID: a.runID, Message: err.Error()})
	a.applyPolicy(Exit{SpawnFailed: true, At: a.deps.Now()}, "spawn failed")
	return err
}

// errSpawn wraps a spawn failure with the unit's context.
func (a *actor) errSpawn(err error) error {
	return fmt.Errorf("supervise: unit %s: spawn: %w", a.cfg.Name, err)
}
