package proctree

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// Reaper reaps zombies this process inherited as a child subreaper (adopted
// orphans) while leaving alone the children that exec.Cmd (or similar) owns
// and will Wait for: reaping those would make their Wait fail with ECHILD.
//
// Every child this process starts while a Reaper runs must be started
// through Spawn, so it is registered before the reaper can see it exit.
type Reaper struct {
	logger *slog.Logger

	// pass is held for writing across a whole scan-and-reap pass and for
	// reading across a Spawn's start, so a child is registered before any
	// pass can look at it while spawns overlap one another.
	pass sync.RWMutex
	// mu guards owned, skipped and started.
	mu    sync.Mutex
	owned map[int]struct{}
	// slots bounds the spawns in flight: each holds an OS thread (locked
	// while it joins cgroup v1 leaves, blocked in the fork until the
	// child's exec), and a start --all of 1,000 with no bound made a
	// thread for nearly every one.
	slots chan struct{}
	// skipped holds the registered pids a pass found in /proc and left to
	// their owner's Wait. Only for those can an orphan that took the
	// number after the Wait have been passed over, so only their Release
	// asks for another pass; any other orphan's exit brings a SIGCHLD.
	skipped map[int]struct{}

	kick     chan struct{} // asks for a pass (after Release)
	stop     chan struct{}
	done     chan struct{}
	started  bool
	stopOnce sync.Once
}

// NewReaper returns a Reaper that logs to logger (slog.Default when nil).
func NewReaper(logger *slog.Logger) *Reaper {
	if logger == nil {
		logger = slog.Default()
	}
	return &Reaper{
		logger:  logger,
		owned:   map[int]struct{}{},
		slots:   make(chan struct{}, SpawnsAtOnce()),
		skipped: map[int]struct{}{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// SpawnsAtOnce is how many Spawns may run at once: two per core, so one
// spawn's writes to cgroup files and fork overlap another's wait for its
// child's exec. One at a time, a start --all of 1,000 took a fifth longer
// (docs/benchmarks.md).
func SpawnsAtOnce() int { return 2 * max(1, runtime.GOMAXPROCS(0)) }

// minPassGap is the least time from one pass's start to the next one's.
// A pass reads every other process's stat, and a stop of 1,000 units brings
// 1,000 SIGCHLDs: back to back passes took a core for the whole stop. An
// orphan's zombie waits at most this long; what arrives meanwhile is
// served by one pass.
const minPassGap = 250 * time.Millisecond

// Start runs the reaping goroutine until ctx ends or Stop is called. It
// reaps on SIGCHLD (at most one pass per minPassGap), once at start (for
// orphans adopted earlier) and after the Release of a pid a pass skipped.
// Calling Start more than once has no further effect.
func (r *Reaper) Start(ctx context.Context) {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return
	}
	r.started = true
	r.mu.Unlock()

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGCHLD)
	go func() {
		defer close(r.done)
		defer signal.Stop(sigc)
		r.reapOrphans()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.stop:
				return
			case <-sigc:
			case <-r.kick:
			}
			if wait := minPassGap - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-r.stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
			last = time.Now()
			r.reapOrphans()
		}
	}()
}

// Stop ends the goroutine started by Start and waits for it. It is safe to
// call more than once and without Start.
func (r *Reaper) Stop() {
	r.stopOnce.Do(func() { close(r.stop) })
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if started {
		<-r.done
	}
}

// Spawn runs start (typically a closure around cmd.Start returning
// cmd.Process.Pid) while no pass runs and registers the pid it returns,
// so even a child that exits at once is never reaped here. Up to
// SpawnsAtOnce spawns run at once; more wait for a slot. Call Release
// after the owner's Wait returned.
func (r *Reaper) Spawn(start func() (pid int, err error)) (int, error) {
	r.slots <- struct{}{}
	defer func() { <-r.slots }()
	r.pass.RLock()
	defer r.pass.RUnlock()
	pid, err := start()
	if err != nil {
		return pid, err // start's own error already says what failed
	}
	if pid > 0 {
		r.mu.Lock()
		r.owned[pid] = struct{}{}
		r.mu.Unlock()
	}
	return pid, nil
}

// Release unregisters pid once its owner's Wait returned. If a pass left a
// zombie with that number to the owner, a fresh pass runs afterwards in
// case it was an orphan that took the number.
func (r *Reaper) Release(pid int) {
	r.mu.Lock()
	delete(r.owned, pid)
	_, again := r.skipped[pid]
	delete(r.skipped, pid)
	r.mu.Unlock()
	if !again {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default: // a pass is already pending
	}
}

// reapOrphans reaps every zombie whose parent is this process and which is
// not registered. SIGCHLD coalesces, so each pass looks at all of /proc.
func (r *Reaper) reapOrphans() {
	r.pass.Lock()
	defer r.pass.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	self := os.Getpid()
	// A registered child is its owner's to wait for, so its stat is not
	// even read; it counts as skipped, zombie or not.
	owned := func(pid int) bool {
		_, ok := r.owned[pid]
		if ok {
			r.skipped[pid] = struct{}{}
		}
		return ok
	}
	for _, p := range scanExcept(owned) {
		if p.ppid != self || p.state != 'Z' {
			continue
		}
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		switch {
		case err != nil && errors.Is(err, syscall.ECHILD):
			// Someone else reaped it between the scan and here; nothing left.
		case err != nil:
			r.logger.Warn("proctree: reap orphan", logkey.PID, p.pid, logkey.Err, err)
		case got == p.pid:
			r.logger.Debug("proctree: reaped adopted orphan", logkey.PID, p.pid,
				logkey.ExitCode, ws.ExitStatus(), logkey.Signal, signalName(ws))
		}
	}
}

func signalName(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
