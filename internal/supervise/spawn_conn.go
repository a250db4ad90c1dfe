package supervise

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/runs"
)

// The connection spawner: a remote upstream (UnitConfig.URL) is
// supervised like a process, but each run is a connection. The actor, the
// policy (Decide, Backoff, failed-start counting) and the states are the
// same; what differs is behind connOwner and here: a run starts by
// resolving the headers and handing the connection to Deps.OnLink (its
// Link an endpoint.Target, whose values are secrets held only for the
// connection's life), it is ready when the broker reports Started
// (initialize and the first tool listing), it is stopped by cancelling its
// context, and it ends when the broker reports Ended (once; later reports
// are ignored).

// spawnConn starts a run of a remote upstream: a connection instead of a
// process. Like a spawn, every failure goes through the policy.
func (a *actor) spawnConn(cause runs.Cause) error {
	cfg := a.cfg.clone()
	a.setState(StateStarting)
	if a.deps.OnLink == nil {
		return a.spawnFailed(a.errConnect(errors.New("nothing serves remote upstreams here")))
	}
	target, err := resolveRemote(cfg)
	if err != nil {
		return a.spawnFailed(a.errConnect(err))
	}
	if a.deps.OnSecrets != nil && len(target.Secrets) > 0 {
		a.deps.OnSecrets(target.Secrets)
	}
	run, err := a.deps.Runs.Begin(cfg.Name, cause)
	if err != nil {
		return a.spawnFailed(a.errConnect(fmt.Errorf("begin run: %w", err)))
	}
	a.runID = run.ID
	a.publish() // the run while starting, before the broker can report on it
	a.deps.Log.SetRun(run.ID)

	a.gen++
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	close(done) // no output to drain
	p := &proc{gen: a.gen, cfg: cfg, run: run.ID, conn: true, own: connOwner{cancel: cancel},
		ioDone: done, abandon: make(chan struct{}), startedAt: a.deps.Now()}
	a.proc = p
	shown := endpoint.Redact(cfg.URL)
	a.deps.Log.Event(run.ID, "connecting to "+shown)
	a.deps.Logger.Info("supervise: connecting", logkey.Run, run.ID, logkey.URL, shown, logkey.Cause, cause)

	ended := make(chan error, 1)
	var once sync.Once
	a.deps.OnLink(ctx, api.UpstreamRun{Unit: cfg.Name, Run: run.ID, Link: target, Started: a.startedFunc(run.ID),
		Ended: func(err error) { once.Do(func() { ended <- err }) }})
	go a.waitConn(p, ended)
	if !a.deps.AwaitReady {
		p.readyAt = p.startedAt
		a.lastErr = ""
		p.healthyTimer = a.arm(a.deps.Limits.HealthyAfter, p.gen, timerHealthy)
		a.setState(a.upState())
	}
	// Otherwise starting until the broker reports the run ready (onReady).
	return nil
}

// upState is the state of a unit whose run is up.
func (a *actor) upState() State {
	if a.hist.Degraded {
		return StateDegraded
	}
	return StateRunning
}

// resolveRemote reads the env_file (at every connect, so a rotated token
// is picked up by the next one) and expands the headers from it and env,
// never from the daemon's environment. Errors name the file, the header
// and the variable, never a value.
func resolveRemote(cfg UnitConfig) (endpoint.Target, error) {
	vars, err := endpoint.Vars(cfg.EnvFile, cfg.Env)
	if err != nil {
		return endpoint.Target{}, err
	}
	t, err := endpoint.Resolve(cfg.URL, cfg.Headers, func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
	var unset *endpoint.UnsetError
	if errors.As(err, &unset) {
		where := "env"
		if cfg.EnvFile != "" {
			where = "env_file " + cfg.EnvFile + " or env"
		}
		return t, fmt.Errorf("%w (not in %s)", err, where)
	}
	return t, err
}

// waitConn is the waiter of a connection run: it reports the run's end,
// when the broker says so or, after a stop grace, when it never did.
func (a *actor) waitConn(p *proc, ended <-chan error) {
	var err error
	select {
	case err = <-ended:
	case <-p.abandon:
		err = errors.New("the connection did not close within the stop grace: abandoned")
	}
	a.u.post(exitEv{gen: p.gen, conn: true, connErr: err})
}

// connText is the lifecycle text of a connection's end.
func connText(err error) string {
	if err == nil {
		return "disconnected"
	}
	return "connection lost: " + err.Error()
}

// errConnect wraps a connect failure with the unit's context.
func (a *actor) errConnect(err error) error {
	return fmt.Errorf("supervise: unit %s: connect: %w", a.cfg.Name, err)
}

// connOwner ends a connection run: there is no tree, only the context the
// broker serves it under. SIGTERM cancels it (the broker closes the
// session and reports Ended); SIGKILL, after the stop grace, also stops
// waiting for that report.
type connOwner struct{ cancel context.CancelFunc }

func (connOwner) place(*proc, *syscall.SysProcAttr) error { return nil }
func (connOwner) started(*proc, error)                    {}
func (connOwner) settle(*proc)                            {}

// reap releases the run's context once the connection has ended.
func (o connOwner) reap(*proc) int {
	o.cancel()
	return 0
}

func (o connOwner) signal(p *proc, sig syscall.Signal) {
	o.cancel()
	if sig == syscall.SIGKILL {
		p.abandonAfter(0)
	}
}
