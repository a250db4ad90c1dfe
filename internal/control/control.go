package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mcp/prompts"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/schedule"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/trajectory"
)

// UpstreamHooks is what control needs from the MCP broker: it is told the
// configured upstreams and is handed each upstream process's pipes.
type UpstreamHooks interface {
	Configure(units map[string]UpstreamRef)
	Attach(unit string, run uint64, stdin io.WriteCloser, stdout io.ReadCloser)
	Detach(unit string, run uint64, nextRetry time.Time, reason string)
	Status() []BrokerStatus
	Warnings() []string
}

// UpstreamRef names one configured upstream for the broker.
type UpstreamRef struct {
	Key     string
	Project string
}

// BrokerStatus is what the broker knows of one upstream.
type BrokerStatus struct {
	Unit      string
	Tools     int
	Connected bool
	LastError string
}

// StateStore persists the operator's intent (enabled units, active
// profile) so it survives a daemon restart.
type StateStore interface {
	Load() (State, error)
	Save(State) error
}

// State is the persisted intent.
type State struct {
	Enabled map[string]bool `json:"enabled"`
	Profile string          `json:"profile"`
	// Projects maps each project that is up to its file, so registrations
	// survive a daemon restart until `down`.
	Projects map[string]string `json:"projects,omitempty"`
}

// Options wires a Control to the rest of the daemon.
type Options struct {
	ConfigPath string
	Paths      Paths
	Version    string
	Proto      string
	Runs       *runs.Store
	// NewDeps builds the supervise dependencies of one unit; the daemon
	// fills in the shared reaper, ledger, tokens and limits.
	NewDeps func(name string, kind supervise.Kind) (supervise.Deps, error)
	// OpenLog opens the activity/raw log of one unit; onEntry (nil when
	// no trajectories are kept) goes to logs.Options.OnEntry.
	OpenLog func(name string, onEntry func(logs.Entry)) (*logs.Log, error)
	// Trajectories keeps the run transcripts of harnesses that opted in
	// (harvest_trajectory); nil keeps none.
	Trajectories *trajectory.Store
	// SocketPath is passed to harnesses as HARNESS_SOCKET.
	SocketPath string
	// MCPURL, when the HTTP endpoint is on, is passed to harnesses as
	// HARNESS_MCP_URL and shown by daemon_info.
	MCPURL    string
	Upstreams UpstreamHooks
	State     StateStore
	// OnEvent receives every unit event after control has handled it.
	OnEvent func(supervise.Event)
	// OnReload is called after a successful reload (sessions refresh).
	OnReload func()
	// Shutdown asks the daemon to exit; it must not block.
	Shutdown func()
	Logger   *slog.Logger

	// Ownership is shown by daemon_info.
	Ownership Ownership
}

// Control owns the fleet and answers every control operation.
type Control struct {
	opt       Options
	log       *slog.Logger
	startedAt time.Time
	sched     *schedule.Scheduler

	mu       sync.RWMutex
	cfg      *config.Config
	units    map[string]*unit
	profile  string
	prompts  *prompts.Set
	warnings []string
	intentMu sync.Mutex      // guards enabled; never held while taking mu
	enabled  map[string]bool // persisted intent, by unit name
	projects map[string]*config.Project
	// projectWarnings are kept apart from the config's own warnings,
	// which each reload recomputes.
	projectWarnings []string
	// unrestored are projects that were up but could not be restored at
	// boot; they stay in the state file until up or down.
	unrestored map[string]string
	// retiring counts units being stopped after they left the config.
	retiring sync.WaitGroup
	brokerMu sync.Mutex // orders configureBroker calls
	// reconcileMu serialises whole reconciles (reload, project up/down),
	// from deciding to applying; actors never take it.
	reconcileMu sync.Mutex
	closing     atomic.Bool   // set once Close begins
	dirty       chan struct{} // state file needs writing (capacity 1)
	stopSaver   chan struct{}
	saverDone   chan struct{}
}

// New builds a Control on a validated configuration. It spawns nothing:
// call Boot to autostart.
func New(cfg *config.Config, opt Options) (*Control, error) {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	c := &Control{
		opt:        opt,
		log:        opt.Logger,
		startedAt:  time.Now(),
		cfg:        &config.Config{},
		units:      map[string]*unit{},
		enabled:    map[string]bool{},
		projects:   map[string]*config.Project{},
		unrestored: map[string]string{},
		dirty:      make(chan struct{}, 1),
		stopSaver:  make(chan struct{}),
		saverDone:  make(chan struct{}),
	}
	var projects map[string]string
	if opt.State != nil {
		st, err := opt.State.Load()
		if err != nil {
			return nil, fmt.Errorf("control: load state: %w", err)
		}
		if st.Enabled != nil {
			c.enabled = st.Enabled
		}
		c.profile = st.Profile
		projects = st.Projects
	}
	c.sched = schedule.New(c.fire, c.log)
	if _, err := c.apply(cfg, true); err != nil {
		return nil, err
	}
	c.restoreProjects(projects)
	go c.saver(c.stopSaver, c.saverDone)
	return c, nil
}

// Boot starts the scheduler, every upstream, and the harnesses whose intent
// is enabled or that belong to an autostart profile.
func (c *Control) Boot(ctx context.Context) {
	c.sched.Start()
	c.mu.RLock()
	var toStart []*unit
	for _, u := range c.units {
		if u.kind == supervise.KindUpstream || c.wantsAutostart(u) {
			toStart = append(toStart, u)
		}
	}
	c.mu.RUnlock()
	var wg sync.WaitGroup
	for _, u := range toStart {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			if err := u.sup.Start(ctx, runs.Cause("autostart")); err != nil {
				c.log.Error("autostart failed", "unit", u.name, "err", err)
			}
		}(u)
	}
	wg.Wait()
}

// wantsAutostart reports the start intent of a harness at daemon start.
// Caller holds c.mu.
func (c *Control) wantsAutostart(u *unit) bool {
	h := u.harness()
	if h == nil || h.Schedule != "" {
		return false
	}
	c.intentMu.Lock()
	v, ok := c.enabled[u.name]
	c.intentMu.Unlock()
	if u.project != "" {
		// A project that is up runs its harnesses unless one was stopped.
		return !h.IsJob() && (!ok || v)
	}
	if ok {
		return v
	}
	if h.Enabled {
		return true
	}
	for _, p := range c.cfg.Profiles {
		if p.Autostart && contains(p.Harnesses, u.name) {
			return true
		}
	}
	return false
}

// Close stops the scheduler and every unit concurrently, then ends their
// actors. It returns once nothing the fleet started is running.
func (c *Control) Close(ctx context.Context) {
	c.closing.Store(true)
	c.sched.Stop()
	c.mu.Lock()
	us := make([]*unit, 0, len(c.units))
	for _, u := range c.units {
		us = append(us, u)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range us {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			if err := u.sup.Close(ctx); err != nil {
				c.log.Error("close unit", "unit", u.name, "err", err)
			}
			if err := u.log.Close(); err != nil {
				c.log.Error("close unit log", "unit", u.name, "err", err)
			}
		}(u)
	}
	wg.Wait()
	// Units a reload removed may still be stopping.
	c.retiring.Wait()
	close(c.stopSaver)
	<-c.saverDone
	c.writeState()
}

// Config returns the configuration in force.
func (c *Control) Config() *config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// Prompts returns the side-loaded prompt set in force (nil when none).
func (c *Control) Prompts() *prompts.Set {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.prompts
}

// Call runs one control operation. It is the only entry point: the socket,
// the CLI and every MCP session come through here.
func (c *Control) Call(ctx context.Context, caller Caller, op string, args json.RawMessage) (any, error) {
	h, ok := handlers[op]
	if !ok {
		return nil, errcode.Errorf(errcode.InvalidArgument, "unknown operation %q", op)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := h(c, ctx, caller, args)
	if err != nil {
		c.log.Debug("operation failed", "op", op, "caller", caller.Kind, "harness", caller.Harness, "err", err)
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return res, nil
}

type handler func(c *Control, ctx context.Context, caller Caller, args json.RawMessage) (any, error)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"list":         withArgs(func(c *Control, ctx context.Context, a ListArgs) (any, error) { return c.listArgs(a) }),
		"project_up":   withArgs(func(c *Control, ctx context.Context, a ProjectArgs) (any, error) { return c.ProjectUp(ctx, a) }),
		"project_down": withArgs(func(c *Control, ctx context.Context, a ProjectArgs) (any, error) { return c.ProjectDown(ctx, a) }),
		"describe":     withArgs(func(c *Control, ctx context.Context, a NameArg) (any, error) { return c.Describe(a.Name) }),
		"logs":         withArgs(func(c *Control, ctx context.Context, a LogsArgs) (any, error) { return c.Logs(a) }),
		"start":        withArgs(func(c *Control, ctx context.Context, a NamesArgs) (any, error) { return c.Start(ctx, a) }),
		"stop":         withArgs(func(c *Control, ctx context.Context, a NamesArgs) (any, error) { return c.Stop(ctx, a) }),
		"restart":      withArgs(func(c *Control, ctx context.Context, a NamesArgs) (any, error) { return c.Restart(ctx, a) }),
		"runs":         withArgs(func(c *Control, ctx context.Context, a RunsArgs) (any, error) { return c.Runs(a) }),
		"jobs":         func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) { return c.Jobs(), nil },
		"triggers": func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) {
			return c.Triggers(), nil
		},
		"trigger": withArgs(func(c *Control, ctx context.Context, a TriggerArgs) (any, error) { return c.Trigger(ctx, a) }),
		"profiles": func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) {
			return c.Profiles(), nil
		},
		"use_profile": withArgs(func(c *Control, ctx context.Context, a NameArg) (any, error) { return c.UseProfile(ctx, a.Name) }),
		"reload":      func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) { return c.Reload(ctx) },
		"daemon_info": func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) {
			return c.DaemonInfo(), nil
		},
		"list_trajectories": withArgs(func(c *Control, ctx context.Context, a NameArg) (any, error) { return c.ListTrajectories(a) }),
		"get_trajectory":    withArgs(func(c *Control, ctx context.Context, a TrajectoryArgs) (any, error) { return c.GetTrajectory(a) }),
		"mcp_status": func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) {
			return c.MCPStatus(), nil
		},
		"shutdown": func(c *Control, ctx context.Context, _ Caller, a json.RawMessage) (any, error) {
			if c.opt.Shutdown != nil {
				c.opt.Shutdown()
			}
			return map[string]bool{"ok": true}, nil
		},
	}
}

// ListArgs filter `list`: with a project, only that project's units.
type ListArgs struct {
	Project string `json:"project"`
	// ProjectPath selects the project by its file (what `harness ps` knows).
	ProjectPath string `json:"project_path"`
}

// NameArg is the argument of operations that take one harness name.
type NameArg struct {
	Name string `json:"name"`
}

// withArgs decodes an operation's arguments strictly: an unknown field or a
// wrong type is invalid_argument, not silently ignored.
func withArgs[A any](f func(*Control, context.Context, A) (any, error)) handler {
	return func(c *Control, ctx context.Context, _ Caller, raw json.RawMessage) (any, error) {
		var a A
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, errcode.Errorf(errcode.InvalidArgument, "arguments: %v", err)
		}
		return f(c, ctx, a)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
