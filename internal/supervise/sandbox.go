package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/egress"
	"github.com/harness-dev/harness/internal/kaudit"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/sandbox"
)

// EventSandboxDenied is a sandboxed run's refused host (or path).
const EventSandboxDenied = api.EventSandboxDenied

// deniedCooldown is how long one refused target stays quiet after its
// event: a retry loop must not flood the page and notifications.
const deniedCooldown = time.Minute

// maxEmitted bounds the refused targets a run remembers for the
// cooldown: an agent refused many paths forgets those long quiet.
const maxEmitted = 256

// listenerWait bounds the wait for the shim's proxy listener.
const listenerWait = 10 * time.Second

// FileDenials follows sandboxed runs' file refusals as the kernel's audit
// tells them (internal/kaudit; docs/design/sandbox.md).
type FileDenials interface {
	// Watch tells on of each file refusal of the run whose main process
	// is pid, spawned at since (wall clock), until stop. on must not block.
	Watch(pid int, since time.Time, on func(kaudit.Denial)) (stop func())
	// Status says whether refusals are counted now, and if not why.
	Status() kaudit.Status
}

// landlockLogsAfterExec is the Landlock ABI from which the kernel logs a
// domain's denials after an exec (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON).
const landlockLogsAfterExec = 7

// SandboxRun is a run's sandbox (docs/design/sandbox.md): the levels it
// reached and what it refused. Its counters are safe to read from any
// goroutine.
type SandboxRun struct {
	Levels sandbox.Levels
	denied atomic.Int64

	mu      sync.Mutex
	last    string
	emitted map[string]time.Time

	// Files: the kernel's audit tells them (FileDenials), when it can.
	files       FileDenials // nil: not followed
	abi         int         // the Landlock ABI the run was confined with
	spawned     time.Time   // wall clock, before the spawn
	filesDenied atomic.Int64
	lastFile    string // guarded by mu
	unwatch     func()

	wrapped *sandbox.Wrapped
	proxy   *egress.Proxy
}

// Denied is how many requests (or accesses) the run was refused.
func (s *SandboxRun) Denied() int64 { return s.denied.Load() }

// LastDenied is the target of the latest refusal, "" for none.
func (s *SandboxRun) LastDenied() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// FilesDenied is how many file accesses the run was refused while they
// were counted (FilesCounted).
func (s *SandboxRun) FilesDenied() int64 { return s.filesDenied.Load() }

// LastFileDenied is the path of the latest file refusal counted: the
// file, or for a creation the directory ("" for none).
func (s *SandboxRun) LastFileDenied() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastFile
}

// FilesCounted says whether the run's file refusals are counted now and,
// when they are not (or may not be), why, naming how an operator makes
// them counted.
func (s *SandboxRun) FilesCounted() (bool, string) {
	switch {
	case s.files == nil:
		return false, sandbox.FilesDenials
	case s.abi < landlockLogsAfterExec:
		return false, fmt.Sprintf("not counted: Landlock ABI %d logs no denial after the program's exec (ABI %d does)", s.abi, landlockLogsAfterExec)
	}
	st := s.files.Status()
	return st.Counting, st.Why
}

// quietLocked reports whether target's event is within its cooldown, and
// if not starts it. s.mu is held.
func (s *SandboxRun) quietLocked(target string, t time.Time) bool {
	if t.Sub(s.emitted[target]) < deniedCooldown {
		return true
	}
	if len(s.emitted) >= maxEmitted {
		for k, at := range s.emitted {
			if t.Sub(at) >= deniedCooldown {
				delete(s.emitted, k)
			}
		}
	}
	s.emitted[target] = t
	return false
}

// sameSandbox reports whether a and b ask for the same sandbox.
func sameSandbox(a, b sandbox.Policy) bool {
	return a.FS == b.FS && a.Network == b.Network && a.Required == b.Required && a.TmpDir == b.TmpDir &&
		slices.Equal(a.Allow, b.Allow) && slices.Equal(a.RW, b.RW) && slices.Equal(a.Deny, b.Deny) &&
		slices.Equal(a.StateDirs, b.StateDirs) && slices.Equal(a.StateFiles, b.StateFiles) && slices.Equal(a.Read, b.Read) &&
		slices.Equal(a.Keep, b.Keep)
}

func cloneSandbox(p sandbox.Policy) sandbox.Policy {
	p.Allow, p.RW, p.Deny, p.StateDirs = slices.Clone(p.Allow), slices.Clone(p.RW), slices.Clone(p.Deny), slices.Clone(p.StateDirs)
	p.Read, p.StateFiles, p.Keep = slices.Clone(p.Read), slices.Clone(p.StateFiles), slices.Clone(p.Keep)
	return p
}

// sandboxSpawn plans p's sandbox and rewrites cmd and attrs to start
// through the shim. A level that cannot be reached fails the spawn with
// the reason when the policy requires it; otherwise the run starts with
// the levels reached, shown in describe, never silently unconfined.
func (a *actor) sandboxSpawn(p *proc, cmd *exec.Cmd, attrs *syscall.SysProcAttr) error {
	pol := p.cfg.Sandbox
	if !pol.Active() {
		return nil
	}
	spec, lv, err := sandbox.Plan(&pol, sandbox.Probe())
	if why := sandbox.Place(&spec, &lv, &pol, cmd.Dir, envHome(cmd.Env), cmd.Path); why != "" {
		a.deps.Logger.Info("supervise: sandbox keeps the shared /tmp, with a private TMPDIR", logkey.Run, p.run, logkey.Path, why)
	}
	s := &SandboxRun{Levels: lv, emitted: map[string]time.Time{}, spawned: time.Now()}
	if spec.FS {
		s.files, s.abi = a.deps.FileDenials, sandbox.Probe().Landlock
	}
	p.sbx = s
	if err != nil {
		return err
	}
	if lv.Missing != "" {
		a.deps.Logger.Warn("supervise: sandbox below what was asked", logkey.Run, p.run, logkey.Err, lv.Missing)
	}
	if !spec.FS && spec.Net == "" {
		return nil
	}
	if spec.FS && pol.TmpDir != "" {
		if err := os.MkdirAll(pol.TmpDir, 0o700); err != nil {
			return fmt.Errorf("sandbox tmp: %w", err)
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+pol.TmpDir)
	}
	if spec.Net == sandbox.NetAllow {
		cmd.Env = append(cmd.Env, sandbox.ProxyEnv()...)
		s.proxy = egress.New(egress.Config{Allow: pol.Allow, OnDeny: a.onDenied(p.run, s)})
	}
	w, err := sandbox.Wrap(cmd, attrs, spec)
	if err != nil {
		return err
	}
	s.wrapped = w
	return nil
}

// envHome is HOME as env sets it (its last), else the daemon's.
func envHome(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "HOME="); ok {
			return v
		}
	}
	return os.Getenv("HOME")
}

// sandboxStarted follows the start attempt: on success the proxy is
// served on the listener the shim hands over, off the actor.
func (a *actor) sandboxStarted(p *proc, err error) {
	s := p.sbx
	if s == nil || s.wrapped == nil {
		return
	}
	if err != nil {
		s.wrapped.Close()
		return
	}
	s.wrapped.Started()
	if s.files != nil {
		// Registered now that the pid is known: a refusal the kernel
		// reported before is kept for it (internal/kaudit).
		s.unwatch = s.files.Watch(p.pid, s.spawned, a.onFileDenied(p.run, s))
	}
	if s.proxy == nil {
		s.wrapped.Close()
		return
	}
	logger := a.deps.Logger.With(logkey.Run, p.run)
	go func() {
		l, err := s.wrapped.Listener(listenerWait)
		if err != nil {
			// The shim failed before it could hand it over: it says why on
			// the terminal and exits; the run fails with it.
			logger.Warn("supervise: sandbox proxy", logkey.Err, err)
			return
		}
		_ = s.proxy.Serve(l) // until closeSandbox
	}()
}

// closeSandbox ends the run's proxy and its connections, and the
// following of its file refusals.
func (p *proc) closeSandbox() {
	if p.sbx == nil {
		return
	}
	if p.sbx.proxy != nil {
		p.sbx.proxy.Close()
	}
	if p.sbx.unwatch != nil {
		p.sbx.unwatch()
	}
}

// onDenied counts a refusal and emits EventSandboxDenied, once per
// target per deniedCooldown. It runs on the proxy's goroutines.
func (a *actor) onDenied(run uint64, s *SandboxRun) func(target, reason string) {
	onEvent, now, name := a.deps.OnEvent, a.deps.Now, a.cfg.Name
	logger := a.deps.Logger
	return func(target, reason string) {
		s.denied.Add(1)
		t := now()
		s.mu.Lock()
		s.last = target
		quiet := s.quietLocked(target, t)
		s.mu.Unlock()
		logger.Info("supervise: sandbox refused", logkey.Run, run, logkey.Target, target, logkey.Reason, reason)
		if !quiet {
			onEvent(Event{Kind: EventSandboxDenied, Unit: name, RunID: run, Message: target + ": " + reason, Time: t})
		}
	}
}

// onFileDenied counts a file refusal the kernel reported and emits
// EventSandboxDenied ("PATH: fs.read_file"), once per path per
// deniedCooldown, like the proxy's. It runs on kaudit's goroutine. The
// path is shown; nothing of the file is ever read.
func (a *actor) onFileDenied(run uint64, s *SandboxRun) func(kaudit.Denial) {
	onEvent, now, name := a.deps.OnEvent, a.deps.Now, a.cfg.Name
	logger := a.deps.Logger
	return func(d kaudit.Denial) {
		s.filesDenied.Add(1)
		target := d.Path
		if target == "" {
			target = "a file"
		}
		reason := strings.Join(d.Blockers, ",")
		t := now()
		s.mu.Lock()
		s.lastFile = d.Path
		quiet := s.quietLocked(target, t)
		s.mu.Unlock()
		if quiet {
			return
		}
		logger.Info("supervise: sandbox refused a file", logkey.Run, run, logkey.Path, target, logkey.Reason, reason)
		onEvent(Event{Kind: EventSandboxDenied, Unit: name, RunID: run, Message: target + ": " + reason, Time: t})
	}
}
