package supervise

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/sandbox"
)

// Default PTY size of a harness.
const (
	DefaultCols uint16 = 120
	DefaultRows uint16 = 40
)

// UnitConfig is what the supervisor needs to run one unit. The daemon
// builds it from config (paths already expanded).
type UnitConfig struct {
	Name    string
	Kind    Kind
	Cmd     string
	Args    []string
	Dir     string            // working directory; "" is the daemon's
	EnvFile string            // KEY=VALUE file read at every spawn; "" for none
	Env     map[string]string // env table of the config
	// ExtraEnv is set by the daemon (e.g. HARNESS_SOCKET=...), after Env.
	ExtraEnv     []string
	Restart      Policy
	RestartDelay time.Duration // 0 restarts at once (the backoff still applies when degraded)
	StopGrace    time.Duration // 0 takes Limits.StopGrace
	Cols, Rows   uint16        // PTY size; 0 takes 120x40
	// IdleAfter is the silence after which a harness counts as idle; 0
	// takes term.DefaultIdleAfter. It applies at once.
	IdleAfter time.Duration
	// URL makes an upstream remote: each run is a connection to it,
	// served through Deps.OnLink, instead of a process (spawn_conn.go).
	// Headers are its header templates, expanded at every connect from
	// EnvFile and Env only.
	URL     string
	Headers map[string]string
	// Timeout, when set, stops a run that lasts longer (outcome
	// timed_out); the unit does not restart after it. It applies from the
	// next spawn.
	Timeout time.Duration
	// Resources limit each run in cgroup mode (cgroup.Limits; zero: none).
	Resources cgroup.Limits
	// Agent names the adapter that reads the harness's agent state from
	// its screen (agent.Infer when the config sets none; "" is generic).
	// It applies at once.
	Agent string
	// AgentRun is what each run asks of the agent (agentrun.go); it
	// applies from the next spawn.
	AgentRun AgentRun
	// Sandbox confines each run (sandbox.go); zero: unconfined.
	Sandbox sandbox.Policy
}

// spawnEqual reports whether a and b spawn the same process, i.e. whether a
// change between them needs a restart to take effect.
func spawnEqual(a, b UnitConfig) bool {
	return a.Kind == b.Kind && a.Cmd == b.Cmd && slices.Equal(a.Args, b.Args) && a.Dir == b.Dir &&
		a.EnvFile == b.EnvFile && maps.Equal(a.Env, b.Env) && slices.Equal(a.ExtraEnv, b.ExtraEnv) &&
		a.Cols == b.Cols && a.Rows == b.Rows && a.URL == b.URL && maps.Equal(a.Headers, b.Headers) &&
		a.Resources == b.Resources && a.AgentRun == b.AgentRun && sameSandbox(a.Sandbox, b.Sandbox)
}

// clone returns a deep copy, so the actor never shares slices or maps with
// its caller.
func (c UnitConfig) clone() UnitConfig {
	c.Args = slices.Clone(c.Args)
	c.Env = maps.Clone(c.Env)
	c.ExtraEnv = slices.Clone(c.ExtraEnv)
	c.Headers = maps.Clone(c.Headers)
	c.Sandbox = cloneSandbox(c.Sandbox)
	return c
}

// Deps are the collaborators of a unit. Log and Runs are required; the
// rest have defaults.
type Deps struct {
	Log      *logs.Log        // the unit's output and lifecycle entries
	Runs     *runs.Store      // run history
	Tokens   *Tokens          // per-spawn MCP tokens; default: a private registry
	Reaper   *proctree.Reaper // every spawn goes through it when set
	Ledger   *proctree.Ledger // records live trees for the next daemon start when set
	Instance string           // daemon instance id, first part of every tree marker
	Limits   Limits           // zero fields take their defaults
	Now      func() time.Time // default time.Now
	Rand     func() float64   // in [0,1), for jitter; default math/rand/v2
	Logger   *slog.Logger     // default slog.Default()
	// OnEvent is called from the actor for every event; it must not block.
	OnEvent func(Event)
	// OnLink (upstream kind only) hands each new run to whoever serves it
	// (the broker), the same way for every kind: a process's pipes
	// (api.Pipes; the callee owns stdout and may close stdin) or a remote
	// upstream's URL and expanded headers (endpoint.Target). Its Started
	// reports readiness (AwaitReady) and Ended a connection's end. ctx
	// ends when the supervisor ends a connection run; a process run ends
	// with its process. It is called from the actor and must not block.
	// Without it a process's stdout is copied into the Log and a remote
	// upstream cannot start.
	OnLink func(ctx context.Context, r api.UpstreamRun)
	// BaseEnv is the first layer of every unit's environment; default os.Environ().
	BaseEnv []string
	// OnSecrets, when set, is given the secrets a spawn is about to use
	// before the process starts or the connection opens: the env_file's
	// values as read at this spawn, a remote upstream's expanded header
	// values. It is called on the actor: it must be cheap and not block.
	OnSecrets func(values []string)

	// Cgroups, when set, holds every run in a cgroup leaf of its own
	// (cgroup mode): a run ends when its last process does, and stopping
	// it reaches every process in the leaf. Nil is the fallback: process
	// groups, markers and Tracker.
	Cgroups *cgroup.Tree
	// Tracker (fallback mode) attributes adopted orphans to runs; runs
	// are registered with it and their tracked members ended with them.
	Tracker *proctree.Tracker
	// AwaitReady: a run counts as started only once Unit.Started reports
	// success; an exit before that, or a reported failure, is a failed
	// start (an upstream that never completes initialize).
	AwaitReady bool
	// HoldRestart, when set, is asked before a policy restart: a
	// non-empty answer (why) holds the unit instead (docs/design/agents.md): no
	// restart is armed or counted, the exit does not count towards
	// degraded, and the unit stays enabled and stopped, so whoever lifts
	// the hold starts it. It is called on the actor: it must not block.
	HoldRestart func() (why string)
	// TypePrompt, when set, is told at spawn the prompt an interactive
	// run of an agent is to be typed once it is first ready (docs/design/agents.md):
	// the text read at spawn, for run. It is called on the actor: it
	// must not block.
	TypePrompt func(run uint64, text string)
	// FileDenials, when set, follows each sandboxed run's file refusals
	// (describe's files_denied_count, EventSandboxDenied); without it
	// they are not counted, and describe says so.
	FileDenials FileDenials
}

// Event kinds: the values of the wire's event kinds.
const (
	EventState       = api.EventState       // State changed
	EventExit        = api.EventExit        // a run ended: ExitCode or Signal
	EventFlapping    = api.EventFlapping    // the unit became degraded
	EventSpawnFailed = api.EventSpawnFailed // a spawn failed: Message says why
	// EventActivity says a harness turned busy or idle (Activity). It comes
	// from the unit's terminal, not from the actor: Time is when output
	// resumed (busy) or stopped (idle).
	EventActivity = api.EventActivity
)

// Event is a notification for the daemon's subscribers; it is the wire's
// event, so the daemon publishes it as it comes.
type Event = api.Event

// Status is an immutable snapshot of a unit, published after every
// transition.
type Status struct {
	Name         string
	Kind         Kind
	State        State
	Enabled      bool
	PID          int // 0 when no process runs
	RestartCount int // policy restarts since the last explicit start
	LastExitCode *int
	LastSignal   string
	RunID        uint64    // current run, else the last one
	StartedAt    time.Time // start of the current run
	NextRetry    time.Time // when a pending policy restart fires
	// LastError is the last spawn failure, cleared by a successful spawn;
	// for a connection also why the last one ended, cleared once one is
	// ready.
	LastError string
	// ConfigChanged is set while the running process was spawned from a
	// config that differs from the current one.
	ConfigChanged bool
	Cols, Rows    uint16
	// Cgroup is the current run's leaf in cgroup mode (for its event
	// counters), nil otherwise.
	Cgroup *cgroup.Group
	// Sandbox is the current run's sandbox, nil when unconfined.
	Sandbox *SandboxRun
}

// HasRun reports whether the unit has a current run: a process, or in
// cgroup mode a run that goes on after its main process exited (PID is
// then 0).
func (s Status) HasRun() bool { return !s.StartedAt.IsZero() }
