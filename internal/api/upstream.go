package api

import (
	"io"
	"time"
)

// The upstream seam: what control tells the MCP broker about configured
// upstreams, what the broker reports back, and one run of an upstream as
// its supervisor hands it over. None of these go on the wire; they live
// here because control, supervise and the broker may not import each
// other.

// ToolPolicy is how an upstream's tools are classified for scoping
// (docs/design/mcp.md): globs over the upstream's own tool names. A tool matched by
// WriteTools is write, else by ReadTools read, else its readOnlyHint
// decides; ExcludeTools hides a tool from every session.
type ToolPolicy struct {
	ReadTools    []string // read_tools
	WriteTools   []string // write_tools
	ExcludeTools []string // exclude_tools
	// ExcludePrompts (exclude_prompts) hides upstream prompts by their
	// own names from every session.
	ExcludePrompts []string
	// ExcludeResources (exclude_resources) hides upstream resources and
	// templates by their own URIs from every session.
	ExcludeResources []string
}

// UpstreamRef is one configured upstream ([mcp.KEY]) as the broker knows
// it. A global upstream's unit name is its key; a project upstream's is
// "project/key".
type UpstreamRef struct {
	Key     string
	Project string // "" for a global upstream
	// Tools classifies its tools; a change re-classifies the listed tools
	// at once, without a restart.
	Tools ToolPolicy
	// CallTimeout bounds each proxied call (call_timeout_s); 0 takes the
	// broker's default. A change applies to the next call.
	CallTimeout time.Duration
	// MaxResult bounds one message read from the upstream, in bytes
	// (max_result_bytes); 0 takes the transport's default. A change
	// applies to the next connection.
	MaxResult int
	// OAuth (auth = "oauth") authorizes its connections with the tokens
	// of the daemon's sign-in store (internal/upauth); a change applies to
	// the next connection.
	OAuth bool
	// Pin (pin) is how its tools are pinned; "" is PinChanges.
	Pin PinMode
	// Rate (rate, burst) bounds the calls to all its tools together,
	// ToolRates (tools = { NAME = { rate, burst } }) those to one tool
	// by its own name. A change applies to the next call.
	Rate      Rate
	ToolRates map[string]Rate
}

// UpstreamSession is what the broker knows of one upstream's MCP session.
type UpstreamSession struct {
	Unit      string
	Key       string
	Project   string
	Connected bool
	Tools     int // tools served (excluded ones left out)
	LastError string
	NextRetry time.Time
	// ToolClasses is every listed tool's class and why, excluded ones
	// included, sorted by tool name (mcp_status).
	ToolClasses []ToolClass
}

// UpstreamRun is one run of an upstream unit, handed by its supervisor
// (through control) to the broker, whatever the kind of upstream.
type UpstreamRun struct {
	Unit string
	Run  uint64
	// Link is how to reach this run. Its dynamic type chooses the broker's
	// transport: Pipes for a process upstream, endpoint.Target for a remote
	// one; another transport registers a type of its own.
	Link any
	// Started reports the run's start: nil once initialize and the first
	// tool listing succeeded, else why they failed. nil: nobody asks.
	Started func(error)
	// Ended reports, once the session is over, why it ended (nil when the
	// run was stopped, detached or replaced). nil: nobody asks.
	Ended func(error)
}

// Pipes is the Link of a process upstream's run: the child's stdin and
// stdout. Whoever serves the run owns both and closes them.
type Pipes struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
}
