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
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/sandbox"
)

// EventSandboxDenied is a sandboxed run's refused host (or path).
const EventSandboxDenied = api.EventSandboxDenied

// deniedCooldown is how long one refused target stays quiet after its
// event: a retry loop must not flood the page and notifications.
const deniedCooldown = time.Minute

// listenerWait bounds the wait for the shim's proxy listener.
const listenerWait = 10 * time.Second

// SandboxRun is a run's sandbox (docs/design/sandbox.md): the levels it
// reached and what it refused. Its counters are safe to read from any
// goroutine.
type SandboxRun struct {
	Levels sandbox.Levels
	denied atomic.Int64

	mu      sync.Mutex
	last    string
	emitted map[string]time.Time

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
	s := &SandboxRun{Levels: lv, emitted: map[string]time.Time{}}
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

// closeSandbox ends the run's proxy and its connections.
func (p *proc) closeSandbox() {
	if p.sbx != nil && p.sbx.proxy != nil {
		p.sbx.proxy.Close()
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
		quiet := t.Sub(s.emitted[target]) < deniedCooldown
		if !quiet {
			s.emitted[target] = t
		}
		s.mu.Unlock()
		logger.Info("supervise: sandbox refused", logkey.Run, run, logkey.Target, target, logkey.Reason, reason)
		if !quiet {
			onEvent(Event{Kind: EventSandboxDenied, Unit: name, RunID: run, Message: target + ": " + reason, Time: t})
		}
	}
}
