package supervise

import (
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
)

// owner holds a unit's runs and ends their whole trees. Deps.Cgroups picks
// the kind: a cgroup leaf per run, whose membership the kernel keeps, or
// (fallback) the run's process group and session, its marker and the
// daemon's Tracker.
type owner interface {
	// place prepares the spawn of p; attrs is what the child starts with.
	place(p *proc, attrs *syscall.SysProcAttr) error
	// started follows the start attempt of p; err is its failure.
	started(p *proc, err error)
	// signal sends sig to the whole run. It never waits for the run.
	signal(p *proc, sig syscall.Signal)
	// settle runs on the waiter once the main process was reaped and
	// returns when the run is over.
	settle(p *proc)
	// reap ends what is left of an ended run and releases it; it runs off
	// the actor and reports how many processes it killed.
	reap(p *proc) int
}

func newOwner(a *actor) owner {
	if a.deps.Cgroups != nil {
		return cgroupOwner{a}
	}
	return procOwner{a}
}

// cgroupOwner: a run is its leaf cgroup. Every process of the run is in
// it from before its first instruction (clone3 into the cgroup), nothing
// leaves it by forking, setsid or dropping its environment, and the run is
// over when the leaf is empty.
type cgroupOwner struct{ a *actor }

func (o cgroupOwner) place(p *proc, attrs *syscall.SysProcAttr) error {
	g, err := o.a.deps.Cgroups.NewRun(p.cfg.Name, p.run, p.cfg.Resources)
	if err != nil {
		return err
	}
	p.cg = g
	cgroup.SpawnInto(attrs, g.FD())
	return nil
}

func (o cgroupOwner) started(p *proc, err error) {
	logger := o.a.deps.Logger
	if cerr := p.cg.CloseFD(); cerr != nil {
		logger.Warn("supervise: close cgroup", logkey.Run, p.run, logkey.Err, cerr)
	}
	if err != nil {
		if rerr := p.cg.Remove(); rerr != nil {
			logger.Warn("supervise: remove cgroup of a failed spawn", logkey.Run, p.run, logkey.Err, rerr)
		}
	}
}

func (o cgroupOwner) signal(p *proc, sig syscall.Signal) {
	logger := o.a.deps.Logger
	if sig == syscall.SIGKILL {
		if err := p.cg.Kill(); err != nil {
			logger.Error("supervise: cgroup.kill", logkey.Run, p.run, logkey.Err, err)
		}
		// Only a process stuck in the kernel outlives cgroup.kill; do not
		// wait for it forever.
		p.abandonAfter(killWait)
		return
	}
	n, err := p.cg.Signal(sig)
	if err != nil {
		logger.Warn("supervise: signal cgroup", logkey.Run, p.run, logkey.Signal, sig.String(), logkey.Err, err)
	}
	logger.Debug("supervise: signalled cgroup", logkey.Run, p.run, logkey.Signal, sig.String(), logkey.Processes, n)
}

// killWait bounds the wait for a tree after its SIGKILL.
const killWait = 5 * time.Second

// mainExitQuiet is how long the rest of a run may take to follow its main
// process (children dying of SIGHUP) before the run is said to go on.
const mainExitQuiet = 200 * time.Millisecond

func (o cgroupOwner) settle(p *proc) {
	quiet := make(chan struct{})
	t := time.AfterFunc(mainExitQuiet, func() { close(quiet) })
	err := p.cg.WaitEmpty(quiet)
	t.Stop()
	if err == nil {
		return
	}
	if !errors.Is(err, cgroup.ErrWaitCancelled) {
		// The leaf cannot be read: end the run with its main process.
		o.a.deps.Logger.Error("supervise: wait for cgroup", logkey.Run, p.run, logkey.Err, err)
		return
	}
	o.a.u.post(mainExitEv{gen: p.gen})
	if err := p.cg.WaitEmpty(p.abandon); err != nil {
		left, _ := p.cg.Signal(0)
		o.a.deps.Logger.Error("supervise: processes survived cgroup.kill", logkey.Run, p.run, logkey.Cgroup, p.cg.Dir(), logkey.Count, left, logkey.Err, err)
	}
}

func (o cgroupOwner) reap(p *proc) int {
	logger := o.a.deps.Logger.With(logkey.Run, p.run)
	p.closeIO(logger)
	if err := p.cg.Remove(); err != nil {
		logger.Error("supervise: remove run cgroup", logkey.Err, err)
	}
	return 0
}

// procOwner is the fallback without cgroups: the run's process group and
// session, its environment marker, and (with Deps.Tracker) whatever the
// tracker attributes to it: setsid'd, env -i and adopted descendants that
// were seen in the run's tree.
type procOwner struct{ a *actor }

func (procOwner) place(*proc, *syscall.SysProcAttr) error { return nil }

func (o procOwner) started(p *proc, err error) {
	if err != nil || o.a.deps.Tracker == nil {
		return
	}
	if err := o.a.deps.Tracker.Register(p.marker, p.pid); err != nil {
		o.a.deps.Logger.Error("supervise: track run", logkey.Run, p.run, logkey.Err, err)
	}
}

// signal sends sig to the run's process group (its own session, so the
// whole tree short of descendants that called setsid) and to every process
// the tracker attributes to the run outside that group. The tracker first
// takes a fresh look while the tree is still whole: a child is orphaned by
// the very signal that ends its parent. That /proc pass runs off the actor.
func (o procOwner) signal(p *proc, sig syscall.Signal) {
	tr, logger := o.a.deps.Tracker, o.a.deps.Logger
	if tr == nil {
		signalGroup(p, sig, logger)
		return
	}
	go func() {
		tr.Refresh()
		skip := 0 // each process gets one signal: a second SIGTERM may mean "now"
		if signalGroup(p, sig, logger) {
			skip = p.pid
		}
		n := tr.SignalOutside(p.marker, skip, sig)
		logger.Debug("supervise: signalled tracked processes", logkey.Run, p.run, logkey.Signal, sig.String(), logkey.Processes, n)
	}()
}

// signalGroup signals the process group of p's main process while that
// process is not reaped (afterwards the id may belong to someone else, and
// reap takes over) and reports whether it did. The lock keeps the waiter
// from reaping between the check and the kill.
func signalGroup(p *proc, sig syscall.Signal, logger *slog.Logger) bool {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.waited {
		return false
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		if !errors.Is(err, syscall.ESRCH) {
			logger.Warn("supervise: signal group", logkey.Run, p.run, logkey.Pgid, p.pid, logkey.Signal, sig.String(), logkey.Err, err)
		}
		return false
	}
	logger.Debug("supervise: signalled group", logkey.Run, p.run, logkey.Pgid, p.pid, logkey.Signal, sig.String())
	return true
}

func (procOwner) settle(*proc) {}

// reap kills what outlived the main process: the group and session it led,
// marker carriers and tracked members, pass after pass until a pass finds
// nothing (a leftover may fork and setsid between a scan and its signal).
func (o procOwner) reap(p *proc) int {
	logger, tr, wait := o.a.deps.Logger.With(logkey.Run, p.run), o.a.deps.Tracker, o.a.deps.Limits.WaitDelay
	deadline := time.Now().Add(wait)
	killed := 0
	if tr != nil {
		tr.Refresh() // orphans of the main process keep their attribution
	}
	for pass := 0; ; pass++ {
		// Find first: a process in the middle of dying may no longer show
		// its environment, but it still shows as alive.
		left := proctree.Find(p.marker)
		n := proctree.Kill(p.pid, p.marker, p.exited, syscall.SIGKILL)
		var tracked []proctree.Ident
		if tr != nil {
			tracked = tr.Members(p.marker)
			n += tr.Signal(p.marker, syscall.SIGKILL)
		}
		if pass == 0 {
			p.closeIO(logger)
		}
		if n == 0 && len(left) == 0 {
			break
		}
		// The same process may be hit again while it dies: report the
		// largest pass, not the sum.
		killed = max(killed, n, len(left))
		for _, pid := range left {
			for proctree.Alive(pid) && time.Now().Before(deadline) {
				// Polling /proc is the only way to see a non-child go away.
				time.Sleep(5 * time.Millisecond)
			}
		}
		for _, id := range tracked {
			for proctree.LiveIdent(id) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
		// Unmarked group members are not in left: give them a moment to
		// die before the next scan instead of spinning on /proc.
		time.Sleep(5 * time.Millisecond)
		if tr != nil {
			tr.Refresh()
		}
		if time.Now().After(deadline) {
			logger.Error("supervise: leftovers survived SIGKILL", logkey.Pids, proctree.Find(p.marker))
			break
		}
	}
	if tr != nil {
		// Whatever the tracker still finds of this run from now on, it kills.
		tr.Finish(p.marker)
	}
	return killed
}
