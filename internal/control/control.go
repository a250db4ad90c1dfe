package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/schedule"
	"github.com/harness-dev/harness/internal/supervise"
	"github.com/harness-dev/harness/internal/trajectory"
	"github.com/harness-dev/harness/internal/upauth"
)

// UpstreamHooks is what control needs from the MCP broker, which is it
// as it is (internal/mcp/broker): it is told the configured upstreams and
// handed every run of every upstream the same way, whatever its kind
// (supervise.Deps.OnLink), and told when a run ended.
type UpstreamHooks interface {
	Configure(units map[string]api.UpstreamRef)
	// Serve serves one run of an upstream (api.UpstreamRun's Link picks
	// the transport); the run reports its start and end itself.
	Serve(ctx context.Context, run api.UpstreamRun)
	Detach(unit string, run uint64, nextRetry time.Time, reason string)
	Status() []api.UpstreamSession
	Warnings() []string
}

// PromptSource loads the side-loaded prompts of a configuration
// ([mcp.prompts].paths). Control does not serve prompts; it decides when a
// configuration takes effect, so it loads them with it and keeps their
// warnings for reload and daemon_info.
type PromptSource interface {
	// Load reads the prompt directories. commit puts the new prompts in
	// force; it is called only if the configuration is applied.
	Load(paths []string) (commit func(), warnings []string)
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
	Paths      api.Paths
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
	// Exe is the harness binary a known agent launches as its MCP server
	// and hook command (wire.go); "" wires no agent.
	Exe string
	// Tokens resolves the run tokens `hook` calls carry (hook.go); nil
	// refuses every hook call.
	Tokens TokenLookup
	// MCPURL, when the HTTP endpoint is on, is passed to harnesses as
	// HARNESS_MCP_URL and shown by daemon_info.
	MCPURL    string
	Upstreams UpstreamHooks
	// Prompts loads the prompts of each applied configuration; nil loads none.
	Prompts PromptSource
	State   StateStore
	// OnEvent receives every unit event after control has handled it.
	OnEvent func(supervise.Event)
	// OnReload is called after a successful reload or project up/down
	// (sessions refresh) with the configuration now in force.
	OnReload func(*config.Config)
	// Shutdown asks the daemon to exit; it must not block.
	Shutdown func()
	Logger   *slog.Logger

	// Ownership is shown by daemon_info.
	Ownership api.Ownership
	// DashboardURL, when the HTTP endpoint serves the web dashboard, is
	// shown by daemon_info.
	DashboardURL string
	// Devices pairs and ends the devices of the listener for people
	// (devices.go); nil when [web] listen is not set.
	Devices Devices
	// Tailnet is daemon_info's view of the tailnet node ([web] tailnet):
	// its URL, and why it is not up; nil without one.
	Tailnet func() (url, failure string)
	// Reaper starts the children control runs itself (git, for worktrees)
	// when the daemon reaps adopted orphans: an unregistered child's exit
	// status may be taken by it, and its Wait then fails (ECHILD). Nil:
	// no orphan reaper runs.
	Reaper *proctree.Reaper
	// StateWrites reports the state dir's write failures for daemon_info;
	// nil reports none.
	StateWrites func() api.StateWrites
	// Telemetry reports the OTLP export for daemon_info; nil when off.
	Telemetry func() *api.TelemetryInfo
	// Calls is the MCP call log (calls.go); nil keeps none.
	Calls CallLog
	// Masker hides secrets in what operations render (screen, logs);
	// control loads it with the fleet's secrets at every applied
	// configuration (mask.go). nil masks the credential shapes only.
	Masker *mask.Masker
	// NewNotifier builds the notifier and NewWebhooks the webhook
	// receiver (events.go), each on this Control; nil builds none. New
	// calls them once, before any unit exists, so the notifier sees every
	// event and neither ever holds a Control that is not there yet.
	NewNotifier func(*Control) Notifier
	NewWebhooks func(*Control) (Webhooks, error)
	// OAuth keeps the sign-ins of upstreams with auth = "oauth"
	// (oauth.go); nil serves none.
	OAuth *upauth.Store
	// Audit records every state-changing operation (audit.go); nil
	// keeps none.
	Audit AuditLog
}

// Control owns the fleet and answers every control operation.
//
// Lock order (a lock may be taken while holding the ones before it, never
// the reverse): newMu, reconcileMu, brokerMu, mu, intentMu. A method whose name
// ends in Locked needs mu held by its caller. Unit actors call back into
// control (onEvent) and may take intentMu only: a reconcile holding mu may
// be waiting for an actor.
type Control struct {
	opt       Options
	log       *slog.Logger
	startedAt time.Time

	// The masker's literals (mask.go): those of the applied
	// configuration, those first read at a spawn, and the set of both.
	maskMu    sync.Mutex
	maskBase  []string
	maskExtra []string
	maskSeen  map[string]struct{}
	sched     *schedule.Scheduler

	// reconcileMu serialises whole reconciles (reload, project up/down),
	// from deciding to applying.
	reconcileMu sync.Mutex
	// brokerMu orders configureBroker calls, each made without mu.
	brokerMu sync.Mutex

	// mu guards the fleet: the fields up to intentMu.
	mu       sync.RWMutex
	cfg      *config.Config
	units    map[string]*unit
	profile  string
	warnings []string
	projects map[string]*config.Project
	// projectWarnings are kept apart from the config's own warnings,
	// which each reload recomputes.
	projectWarnings []string
	// unrestored are projects that were up but could not be restored at
	// boot; they stay in the state file until up or down.
	unrestored map[string]string

	// worktreeMu serialises making and removing worktrees (worktree.go).
	worktreeMu sync.Mutex
	// newMu serialises new and rm (new.go): each checks the files of
	// harness.d, then writes or removes one.
	newMu sync.Mutex
	// wtLocks holds one *sync.Mutex per harness for its setup and its
	// land (bootstrap.go, land.go).
	wtLocks sync.Map
	// ports is the book of the harnesses' TCP ports (ports.go).
	ports portBook

	intentMu sync.Mutex      // guards enabled
	enabled  map[string]bool // persisted intent, by unit name

	// holds follows every harness's hold over time (holds.go).
	holds holdWatch

	// The notifier and the webhook receiver (events.go), built by New
	// before any unit and never changed after; nil when there is none.
	notifier Notifier
	webhooks Webhooks

	// retiring counts units being stopped after they left the config.
	retiring sync.WaitGroup
	// background counts work a call starts and does not wait for (a
	// Stop hook's transcript read, the loop guard's end of a run): Close
	// waits for it, so none touches the run history or a unit after.
	// Added to by goBackground only.
	background sync.WaitGroup
	hooks      []unitHook    // what a unit's event sets off (unithooks.go); set by New
	closing    atomic.Bool   // set once Close begins
	dirty      chan struct{} // state file needs writing (capacity 1)
	stopSaver  chan struct{}
	saverDone  chan struct{}
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
		holds:      holdWatch{wake: make(chan struct{}, 1), done: make(chan struct{})},
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
	c.hooks = c.unitHooks()
	c.sched = schedule.New(c.fire, c.log)
	if err := c.buildEventParts(); err != nil {
		return nil, err
	}
	if _, err := c.apply(cfg, true); err != nil {
		return nil, err
	}
	c.restoreProjects(projects)
	c.applyEventConfig()
	go c.saver(c.stopSaver, c.saverDone)
	return c, nil
}

// Boot starts the scheduler, every upstream, and the harnesses whose intent
// is enabled or that belong to an autostart profile.
func (c *Control) Boot(ctx context.Context) {
	c.sched.Start()
	c.catchUp(time.Now())
	c.startHoldWatch()
	c.mu.RLock()
	var toStart []*unit
	for _, u := range c.units {
		if u.kind == supervise.KindUpstream || c.wantsAutostartLocked(u) {
			toStart = append(toStart, u)
		}
	}
	c.mu.RUnlock()
	var wg sync.WaitGroup
	for _, u := range toStart {
		wg.Add(1)
		go func(u *unit) {
			defer wg.Done()
			if err := c.admit(u, false); err != nil {
				// Started by the hold watch when the hold lifts.
				c.log.Info("autostart held", logkey.Unit, u.name, logkey.Err, err)
				return
			}
			if err := c.startUnit(ctx, u, api.CauseAutostart); err != nil {
				c.log.Error("autostart failed", logkey.Unit, u.name, logkey.Err, err)
			}
		}(u)
	}
	wg.Wait()
}

// wantsAutostartLocked reports the start intent of a harness at daemon start.
// Caller holds c.mu.
func (c *Control) wantsAutostartLocked(u *unit) bool {
	h := u.harness()
	if h == nil || h.Schedule != "" {
		return false
	}
	c.intentMu.Lock()
	v, ok := c.enabled[u.name]
	c.intentMu.Unlock()
	if ok && v && h.IsJob() && !c.parkedForLimit(u.name) {
		// A job runs when it fires. The intent its run leaves when the
		// daemon stops or dies under it would run it again as autostart,
		// without what fired it (a deploy twice, the second without its
		// payload). A job parked for a usage limit means to run at the
		// reset, and does.
		ok = false
	}
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
	c.stopHoldWatch()
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
				c.log.Error("close unit", logkey.Unit, u.name, logkey.Err, err)
			}
			if err := u.log.Close(); err != nil {
				c.log.Error("close unit log", logkey.Unit, u.name, logkey.Err, err)
			}
			c.unwire(u.name)
		}(u)
	}
	wg.Wait()
	// Units a reload removed may still be stopping.
	c.retiring.Wait()
	c.unwireDone()
	c.background.Wait()
	close(c.stopSaver)
	<-c.saverDone
	c.writeState()
}

// goBackground runs f on a goroutine of its own that Close waits for, or
// not at all (false) once Close has begun. Close sets closing before it
// takes mu, so work counted here is waited for and work not counted
// never starts.
func (c *Control) goBackground(f func()) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closing.Load() {
		return false
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		f()
	}()
	return true
}

// Config returns the configuration in force.
func (c *Control) Config() *config.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// Call runs one control operation. It is the only entry point: the socket,
// the CLI and every MCP session come through here. caller is for the log:
// scope has been checked by whoever admitted it.
func (c *Control) Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error) {
	run, ok := opTable[op]
	if !ok {
		return nil, errcode.Errorf(errcode.InvalidArgument, "unknown operation %s", errcode.Quote(op))
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := run.call(c, withCaller(ctx, caller), args)
	c.auditCall(caller, op, args, err)
	if err != nil {
		c.log.Debug("operation failed", logkey.Op, op, logkey.Caller, caller.Kind, logkey.Harness, caller.Harness, logkey.Err, err)
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return res, nil
}

type callerKey struct{}

// withCaller carries who asks to the operation, for the few answers that
// depend on it (describe hides env values from MCP sessions).
func withCaller(ctx context.Context, caller api.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// callerOf is the caller of the operation ctx belongs to; the zero Caller
// (no kind) when called directly, not through Call.
func callerOf(ctx context.Context) api.Caller {
	c, _ := ctx.Value(callerKey{}).(api.Caller)
	return c
}

// opFunc is one entry of the op table: call decodes its arguments and runs
// the operation; args and result are the method's types, which a test
// holds to the op's api.Spec.
type opFunc struct {
	call         func(c *Control, ctx context.Context, args json.RawMessage) (any, error)
	args, result reflect.Type
}

// opTable maps every op name of the wire (api.Ops) to its method. A new
// operation is a method of this shape, a line here, its name, types and
// spec line in internal/api; the tests hold this table to the specs (names
// and types), and the facade and the CLI's verbs to them.
var opTable = map[string]opFunc{
	api.OpList:             answersAs[[]api.UnitInfo](op((*Control).listAnswer)),
	api.OpDescribe:         op((*Control).Describe),
	api.OpLogs:             op((*Control).Logs),
	api.OpStart:            op((*Control).Start),
	api.OpStop:             op((*Control).Stop),
	api.OpRestart:          op((*Control).Restart),
	api.OpRuns:             op((*Control).Runs),
	api.OpJobs:             op((*Control).Jobs),
	api.OpTriggers:         op((*Control).Triggers),
	api.OpTrigger:          op((*Control).Trigger),
	api.OpProfiles:         op((*Control).Profiles),
	api.OpUseProfile:       op((*Control).UseProfile),
	api.OpReload:           op((*Control).Reload),
	api.OpDaemonInfo:       op((*Control).DaemonInfo),
	api.OpShutdown:         op((*Control).Shutdown),
	api.OpMCPStatus:        op((*Control).MCPStatus),
	api.OpMCPLogin:         op((*Control).MCPLogin),
	api.OpMCPLogout:        op((*Control).MCPLogout),
	api.OpMCPPins:          op((*Control).MCPPins),
	api.OpMCPApprove:       op((*Control).MCPApprove),
	api.OpProjectUp:        op((*Control).ProjectUp),
	api.OpProjectDown:      op((*Control).ProjectDown),
	api.OpWorktreeRemove:   op((*Control).WorktreeRemove),
	api.OpDiff:             op((*Control).Diff),
	api.OpReview:           op((*Control).Review),
	api.OpLand:             op((*Control).Land),
	api.OpListTrajectories: op((*Control).ListTrajectories),
	api.OpGetTrajectory:    op((*Control).GetTrajectory),
	api.OpCalls:            op((*Control).Calls),
	api.OpSend:             op((*Control).Send),
	api.OpAnswer:           op((*Control).Answer),
	api.OpHook:             op((*Control).Hook),
	api.OpTurns:            op((*Control).Turns),
	api.OpScreen:           op((*Control).Screen),
	api.OpWait:             op((*Control).Wait),
	api.OpDelegate:         op((*Control).Delegate),
	api.OpNotifyTest:       op((*Control).NotifyTest),
	api.OpRun:              op((*Control).Run),
	api.OpNew:              op((*Control).New),
	api.OpRm:               op((*Control).Rm),
	api.OpAgents:           op((*Control).Agents),
	api.OpAudit:            op((*Control).Audit),
	api.OpPair:             op((*Control).Pair),
	api.OpDevices:          op((*Control).DevicesList),
	api.OpDevicesRevoke:    op((*Control).DevicesRevoke),
}

// op adapts a typed operation to the table. Arguments are decoded
// strictly: an unknown field or a wrong type is invalid_argument, not
// silently ignored.
func op[A, R any](f func(*Control, context.Context, A) (R, error)) opFunc {
	call := func(c *Control, ctx context.Context, raw json.RawMessage) (any, error) {
		var a A
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, errcode.Errorf(errcode.InvalidArgument, "arguments: %v", err)
		}
		return f(c, ctx, a)
	}
	return opFunc{call: call, args: reflect.TypeFor[A](), result: reflect.TypeFor[R]()}
}

// answersAs is f declared as answering R, for an op whose method answers
// an R already encoded: the list op's rows come encoded from its cache
// (listing) and marshal as the []api.UnitInfo its spec names.
func answersAs[R any](f opFunc) opFunc {
	f.result = reflect.TypeFor[R]()
	return f
}

// Shutdown answers `shutdown`: the daemon stops every unit and exits. It
// returns at once; the daemon does the rest.
func (c *Control) Shutdown(context.Context, api.NoArgs) (api.OK, error) {
	if c.opt.Shutdown != nil {
		c.opt.Shutdown()
	}
	return api.OK{OK: true}, nil
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
