// Package config loads harness.toml (docs/design/runs.md) into a validated *Config,
// and project files (a project's own harness.toml) into a *Project.
//
// Every problem is reported, not just the first: the returned error joins
// one *Error per problem in line order, each reading
// `FILE:LINE: KEY: message` (for example
// `harness.toml:14: mcp.broken: cmd is required`), and the whole error is
// errors.Is errcode.ErrConfigInvalid. A file with any problem yields no
// config, so a caller keeps its last good one.
package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
)

// Defaults applied when a key is absent.
const (
	// DefaultRestartDelay is restart_delay for harnesses and upstreams.
	DefaultRestartDelay = 1 * time.Second
	// DefaultStopGrace is stop_grace: the wait between SIGTERM and SIGKILL.
	DefaultStopGrace = 10 * time.Second
)

// Config is a validated global harness.toml.
type Config struct {
	Path      string               // file it came from ("" for an empty config)
	Daemon    Daemon               // [daemon]
	Defaults  Defaults             // [defaults]
	Harnesses map[string]*Harness  // [harness.NAME], by name
	Order     []string             // harness names in file order
	Profiles  map[string]*Profile  // [profile.NAME], by name
	Upstreams map[string]*Upstream // [mcp.KEY] for KEY != "prompts", by key
	Prompts   Prompts              // [mcp.prompts]
	Notifiers map[string]*Notify   // [notify.NAME], by name (events.go)
	Webhooks  map[string]*Webhook  // [webhook.NAME], by name (events.go)
	Telemetry Telemetry            // [telemetry] (telemetry.go)
	Web       Web                  // [web] (web.go)
	Hosts     map[string]*Host     // [host.NAME], by name (hosts.go)
	// Warnings are problems that do not stop the file from loading, each
	// `FILE:LINE: KEY: message` (e.g. read_tools and write_tools overlap).
	Warnings []string
	// Included maps each harness declared in harness.d (include.go) to
	// its file's path.
	Included map[string]string
}

// Defaults is the [defaults] table: what every harness starts from.
type Defaults struct {
	// Sandbox (sandbox.go) is every harness's sandbox, a project's too,
	// unless the harness's own sandbox table overrides its keys.
	Sandbox Sandbox
}

// Daemon is the [daemon] table.
type Daemon struct {
	// WatchConfig (watch_config, default false) reloads when the file changes.
	WatchConfig bool
	// MCPHTTP (mcp_http, default "" = off) is the loopback host:port of the
	// Streamable HTTP endpoint; only 127.0.0.0/8, ::1 and localhost pass.
	MCPHTTP string
	// MCPHTTPOperatorAllow (mcp_http_operator_allow, default ["read"]) is
	// what the operator token may call over HTTP, in mcp_allow's grammar.
	MCPHTTPOperatorAllow api.Grant
	// MCPHTTPOperatorTools (mcp_http_operator_tools, default "all") is how
	// the operator token's sessions list tools, as a harness's mcp_tools.
	MCPHTTPOperatorTools api.ToolMode
	// MCPMaxMessage (mcp_max_message_bytes, default DefaultMCPMaxMessage)
	// bounds one MCP message from a client, over the socket or HTTP; a
	// larger one is answered with an error and not read into memory.
	MCPMaxMessage int
	// CallLogArgs (call_log_args, default false) keeps the argument values
	// of MCP calls in the call log, each string cut at a bound.
	CallLogArgs bool
	// WebhookListen (webhook_listen, default "" = off) is the host:port
	// of the webhook listener (docs/design/events.md), its own port; a non-loopback
	// host needs WebhookTLSCert and WebhookTLSKey (webhook_tls_cert,
	// webhook_tls_key: PEM files, "~" expanded).
	WebhookListen                 string
	WebhookTLSCert, WebhookTLSKey string
	// MaxConcurrentAgents (max_concurrent_agents, 0: no bound) holds the
	// start of an agent harness while that many run (docs/design/agents.md).
	MaxConcurrentAgents int
}

// Bounds of [daemon] mcp_max_message_bytes.
const (
	DefaultMCPMaxMessage = 4 << 20
	MinMCPMaxMessage     = 64 << 10
	MaxMCPMaxMessage     = 64 << 20
)

// RestartPolicy says whether a unit is restarted after it exits.
type RestartPolicy string

// The four restart policies.
const (
	RestartAlways        RestartPolicy = "always"
	RestartUnlessStopped RestartPolicy = "unless-stopped"
	RestartOnFailure     RestartPolicy = "on-failure"
	RestartNo            RestartPolicy = "no"
)

// Valid reports whether r is one of the four policies.
func (r RestartPolicy) Valid() bool {
	switch r {
	case RestartAlways, RestartUnlessStopped, RestartOnFailure, RestartNo:
		return true
	}
	return false
}

// Harness is one [harness.NAME] table, with defaults applied:
// Restart "always" without a schedule and "no" with one; RestartDelay 1s;
// StopGrace 10s; Enabled false; MCPAllow ["read"]. Workdir, EnvFile have
// a leading "~" expanded to $HOME.
type Harness struct {
	Name string
	Process
	Description string
	Enabled     bool // autostart intent
	Restart     RestartPolicy
	MCPAllow    api.Grant // CLASS or NAMESPACE:CLASS entries (docs/design/mcp.md)
	// MCPTools (mcp_tools, default "all") is how its sessions list tools:
	// "search" lists the facade plus harness_find_tools/harness_call_tool.
	MCPTools api.ToolMode
	// MCPRate (mcp_rate, "N/s", "N/m" or "N/h") bounds this harness's
	// calls to upstream tools, all upstreams together; zero: no bound.
	MCPRate           api.Rate
	Schedule          string // cron.ParseStandard syntax; "" when none
	HarvestTrajectory bool
	Project           string // "" for global harnesses
	// TermCols x TermRows (term_size = "COLSxROWS", default 120x40) is
	// the PTY and emulator size; IdleAfter (idle_after, seconds, default
	// 3) the silence after which the harness counts as idle.
	TermCols, TermRows int
	IdleAfter          time.Duration
	// Agent (agent) names the adapter of the program cmd runs
	// (docs/design/agents.md); when the key is absent it is inferred from cmd's base name
	// (agent.Infer), so it is always a registered adapter's name.
	Agent string
	// MCPWire (mcp_wire, default true) gives each run of a known agent
	// an MCP configuration that reaches harness; false leaves the
	// agent's MCP configuration to the user.
	MCPWire bool
	// Hooks (hooks, default true) installs the agent's own hooks for each
	// run of a known agent, calling `harness hook` (docs/design/agents.md); false
	// leaves them out for every agent, and the state comes from the
	// screen rules alone.
	Hooks bool
	// Prices (prices, prices.go) are model-name prefixes to USD per
	// million tokens, consulted before the agent's own price table to put
	// cost_usd on a run; nil when the key is absent.
	Prices map[string]agent.Price
	// Job holds timeout, on_overlap, catch_up and keep_runs (jobs.go).
	Job JobControls
	// Worktree (worktree.go), nil when the harness has none.
	Worktree *Worktree
	// Bootstrap is setup, teardown, ports and pr_command (bootstrap.go).
	Bootstrap Bootstrap
	// Holds are hours and max_runs_per_day (jobs.go).
	Holds HoldControls
	// AgentRun is prompt, prompt_file, model, approval, max_turns,
	// resume, on_limit and loop_guard (agentrun.go).
	AgentRun AgentRun
	// Sandbox (sandbox.go) is [defaults] sandbox with the harness's own
	// sandbox keys over it; a project's harness takes the global one.
	Sandbox Sandbox
}

// IsJob reports whether h is a job (docs/design/runs.md): it has a schedule or it is
// not meant to be kept running (restart "no" or "on-failure").
func (h *Harness) IsJob() bool {
	return h.Schedule != "" || h.Restart == RestartNo || h.Restart == RestartOnFailure
}

// Profile is one [profile.NAME] table: a named set of harnesses.
type Profile struct {
	Name      string
	Harnesses []string // every member exists and has no schedule
	Autostart bool     // start the members at daemon start
}

// Upstream is one [mcp.KEY] table: a stdio MCP server (cmd) or a remote
// one over Streamable HTTP (url), with the harness defaults for
// RestartDelay (1s) and StopGrace (10s) and "~" expanded.
type Upstream struct {
	Key string
	Process
	// URL (url) makes the upstream remote: exactly one of Cmd and URL is
	// set. An http or https URL, checked at load (remote.go).
	URL string
	// Headers (headers, remote only) go with every request to URL; a
	// ${VAR} in a value is expanded from EnvFile and Env at every connect,
	// never from the daemon's environment. Values are secrets.
	Headers map[string]string
	// OAuth (auth = "oauth", remote only) signs in with OAuth
	// (docs/design/mcp.md); nil for the default auth = "none".
	OAuth *OAuth
	Tools ToolPolicy
	// CallTimeout (call_timeout_s) bounds each tools/call proxied to the
	// upstream; 0 leaves calls unbounded (the caller may still cancel).
	CallTimeout time.Duration
	// MaxResult (max_result_bytes, default DefaultMaxResult) bounds one
	// message from the upstream, a tool result above all: a larger one
	// is refused as it streams in, never held whole, and its call fails
	// with upstream_unavailable.
	MaxResult int
	Project   string // "" for global upstreams
	// Pin (pin, default "changes") is how its tools are pinned
	// (docs/gateway.md).
	Pin api.PinMode
	// Rate (rate and burst) bounds the calls to all its tools together;
	// ToolRates (tools = { NAME = { rate, burst } }) the calls to one
	// tool, by its own name. Zero: no bound.
	Rate      api.Rate
	ToolRates map[string]api.Rate
}

// Bounds of [mcp.KEY] max_result_bytes.
const (
	DefaultMaxResult = 32 << 20
	MinMaxResult     = 64 << 10
	MaxMaxResult     = 1 << 30
)

// OAuth is an upstream's OAuth sign-in: `harness mcp login KEY` gets the
// tokens (internal/upauth), the connections use and refresh them.
type OAuth struct {
	// ClientID (client_id) is a client registered with the authorization
	// server beforehand; empty registers one dynamically (RFC 7591).
	ClientID string
	// Scopes (scopes) are requested instead of the ones the server
	// advertises.
	Scopes []string
}

// ToolPolicy is how an upstream's tools are classified (api.ToolPolicy):
// the broker reads the same struct.
type ToolPolicy = api.ToolPolicy

// Process is what [harness.*] and [mcp.*] tables share, with the same
// meaning in both: how to spawn
// the process and how to restart and stop it.
type Process struct {
	Cmd          string // required, non-empty
	Args         []string
	Workdir      string
	EnvFile      string
	Env          map[string]string
	RestartDelay time.Duration
	StopGrace    time.Duration
	// Resources limit each run (cgroup mode; resources.go).
	Resources Resources
}

// Prompts is the [mcp.prompts] table.
type Prompts struct {
	Paths []string // directories of prompt markdown, "~" expanded
}

// Load reads and parses the config at path with the harness files of
// harness.d beside it (include.go). A missing file is not an error: it
// yields a Config of harness.d alone (empty without one) whose Path is path.
func Load(path string) (*Config, error) {
	return LoadWith(path, nil)
}

// LoadWith is Load with some of harness.d's files as given instead of as
// on disk (Include.Data nil: as if absent). `harness new` checks a file
// this way before it writes it.
func LoadWith(path string, over map[string]*Include) (*Config, error) {
	var data []byte
	if path != "" {
		var err error
		data, err = readFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: displayName(path), Msg: err.Error(), err: err}
		}
	}
	incs, err := readIncludes(path, over)
	if err != nil {
		return nil, err
	}
	return parse(path, data, incs)
}

// Parse parses and validates data as the global config at path (path is
// used for Config.Path and, by base name, in error messages). It reads
// no harness.d: Load does.
func Parse(path string, data []byte) (*Config, error) {
	return parse(path, data, nil)
}

// parse validates data as the global config at path and incs as its
// harness.d files, each reporting its own problems at its own lines.
func parse(path string, data []byte, incs []*Include) (*Config, error) {
	src, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	isrcs, err := decodeIncludes(incs)
	if err != nil {
		return nil, err
	}
	cfg := empty()
	cfg.Path = path
	d := src.d
	for _, k := range sortedKeys(src.raw) {
		v := src.raw[k]
		switch k {
		case "daemon":
			d.daemon(v, &cfg.Daemon)
		case "defaults":
			// Before "harness" in key order: the harnesses start from it.
			d.defaults(v, &cfg.Defaults)
			d.sandboxBase = &cfg.Defaults.Sandbox
		case "harness":
			for name, hv := range d.subtables([]string{k}, v) {
				if h := d.harness(name, hv, ""); h != nil {
					cfg.Harnesses[name] = h
				}
			}
		case "mcp":
			for key, uv := range d.subtables([]string{k}, v) {
				if key == "prompts" {
					d.prompts(uv, &cfg.Prompts)
					continue
				}
				if u := d.upstream(key, uv, ""); u != nil {
					cfg.Upstreams[key] = u
				}
			}
		case "notify":
			for name, nv := range d.subtables([]string{k}, v) {
				if n := d.notify(name, nv); n != nil {
					cfg.Notifiers[name] = n
				}
			}
		case "webhook":
			for name, wv := range d.subtables([]string{k}, v) {
				if w := d.webhook(name, wv); w != nil {
					cfg.Webhooks[name] = w
				}
			}
		case "telemetry":
			d.telemetry(v, &cfg.Telemetry)
		case "web":
			d.web(v, &cfg.Web)
		case "host":
			for name, hv := range d.subtables([]string{k}, v) {
				if h := d.host(name, hv); h != nil {
					cfg.Hosts[name] = h
				}
			}
		case "profile":
			// Decoded below: membership checks need every harness.
		default:
			d.unknown([]string{k}, v)
		}
	}
	cfg.Order = src.harnessOrder(cfg.Harnesses)
	included := includeHarnesses(cfg, src, isrcs)
	if v, ok := src.raw["profile"]; ok {
		for name, pv := range d.subtables([]string{"profile"}, v) {
			if p := d.profile(name, pv, cfg.Harnesses); p != nil {
				cfg.Profiles[name] = p
			}
		}
	}
	d.checkGrants(cfg.Upstreams)
	d.checkWebhooks(cfg)
	errs := flatten(nil, d.err())
	cfg.Warnings = d.warnings
	for _, is := range isrcs {
		is.d.checkGrants(cfg.Upstreams)
		errs = flatten(errs, is.d.err())
		cfg.Warnings = append(cfg.Warnings, is.d.warnings...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.Included = included
	return cfg, nil
}

func empty() *Config {
	return &Config{
		Defaults:  Defaults{Sandbox: defaultSandbox()},
		Daemon:    Daemon{MCPHTTPOperatorAllow: api.DefaultGrant(), MCPHTTPOperatorTools: api.ToolsAll, MCPMaxMessage: DefaultMCPMaxMessage},
		Harnesses: map[string]*Harness{},
		Order:     []string{},
		Profiles:  map[string]*Profile{},
		Upstreams: map[string]*Upstream{},
		Notifiers: map[string]*Notify{},
		Webhooks:  map[string]*Webhook{},
		Hosts:     map[string]*Host{},
		Included:  map[string]string{},
	}
}

// source is a decoded TOML document with what validation needs.
type source struct {
	raw map[string]any
	md  toml.MetaData
	d   *decoder
}

// decode parses TOML once the file is within bounds (limits.go); a syntax
// error comes back as an *Error with the parser's line.
func decode(path string, data []byte) (*source, error) {
	return decodeAs(displayName(path), data)
}

// decodeAs is decode with the file named file in errors.
func decodeAs(file string, data []byte) (*source, error) {
	if err := checkBounds(file, data); err != nil {
		return nil, err
	}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, syntaxError(file, string(data), err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	d := &decoder{problems: problems{file: file, pos: scanPositions(string(data))}}
	return &source{raw: raw, md: md, d: d}, nil
}

// harnessOrder lists the names in harnesses in the order their tables
// first appear in the file.
func (s *source) harnessOrder(harnesses map[string]*Harness) []string {
	order := make([]string, 0, len(harnesses))
	seen := map[string]bool{}
	for _, k := range s.md.Keys() {
		if len(k) < 2 || k[0] != "harness" || seen[k[1]] {
			continue
		}
		if _, ok := harnesses[k[1]]; ok {
			seen[k[1]] = true
			order = append(order, k[1])
		}
	}
	return order
}

// displayName is the file name errors carry: the base name of path.
func displayName(path string) string {
	if path == "" {
		return "harness.toml"
	}
	return filepath.Base(path)
}

var harnessNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
