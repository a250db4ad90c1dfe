package api

import (
	"encoding/json"
	"time"
)

// Callers of a CallRecord: who made an MCP call (docs/design/mcp.md).
const (
	// CallerHarness is a session attributed by a harness's per-spawn token.
	CallerHarness = "harness"
	// CallerOperator is a session opened with the operator token (HTTP).
	CallerOperator = "operator"
	// CallerUnattributed is a bridge session without a token.
	CallerUnattributed = "unattributed"
)

// Transports of a CallRecord.
const (
	TransportSocket = "socket" // `harness mcp` over the control socket
	TransportHTTP   = "http"   // the Streamable HTTP endpoint
)

// Kinds of a CallRecord.
const (
	CallTool   = "tool"   // tools/call
	CallPrompt = "prompt" // prompts/get
)

// Outcomes of a CallRecord other than an error code.
const (
	// OutcomeOK is a call that succeeded.
	OutcomeOK = "ok"
	// OutcomeToolError is an isError result that carries no harness code:
	// the upstream's own tool reported a failure.
	OutcomeToolError = "tool_error"
)

// CallRecord is one MCP tools/call or prompts/get through any session, as
// the call log keeps it: one JSON line each. Argument values are kept only
// with [daemon] call_log_args = true, and then every string is cut.
type CallRecord struct {
	// ID only grows, also across daemon restarts: a follower's cursor.
	ID   uint64    `json:"id"`
	Time time.Time `json:"time"` // when the call arrived
	// Session is the MCP session: the Mcp-Session-Id over HTTP, an id the
	// daemon gives each socket session otherwise.
	Session   string `json:"session"`
	Transport string `json:"transport"`
	// Caller is CallerHarness (then Harness and RunID say which run),
	// CallerOperator or CallerUnattributed.
	Caller  string `json:"caller"`
	Harness string `json:"harness,omitempty"`
	RunID   uint64 `json:"run_id,omitempty"`
	// Project is the calling harness's project, whose upstreams it reaches.
	Project string `json:"project,omitempty"`
	Kind    string `json:"kind"`
	// Tool is the tool name as called (KEY__tool for upstreams), or the
	// prompt name.
	Tool string `json:"tool"`
	// Class is the scope class the session checked the call against; empty
	// where the session knows none (prompts, unknown tools).
	Class         Class           `json:"class,omitempty"`
	Outcome       string          `json:"outcome"`
	DurationMS    float64         `json:"duration_ms"`
	RequestBytes  int             `json:"request_bytes"`
	ResponseBytes int             `json:"response_bytes"`
	Args          json.RawMessage `json:"args,omitempty"`
	// Trace is the W3C traceparent the call sent upstream (its own span)
	// and TraceParent the one it continued (its caller's, or the calling
	// harness's turn); set only while telemetry is on, never stored.
	Trace       string `json:"-"`
	TraceParent string `json:"-"`
}

// CallsArgs are the arguments of `calls`, in the CLI's words.
type CallsArgs struct {
	// Harness keeps the calls of that harness only (PROJECT/NAME for a
	// project's harness).
	Harness string `json:"harness,omitempty"`
	// Tool keeps the calls whose tool (or prompt) matches this glob
	// (path.Match syntax: *, ?, [...]).
	Tool string `json:"tool,omitempty"`
	// Since keeps the calls made at or after this time.
	Since *time.Time `json:"since,omitempty"`
	// Limit bounds the answer (default 100, at most 10000).
	Limit int `json:"limit,omitempty"`
	// Cursor, when set, asks for the calls after this id, oldest first;
	// without it the answer is the newest Limit calls.
	Cursor *uint64 `json:"cursor,omitempty"`
	// WaitS, with Cursor, waits up to this many seconds (at most 60) for a
	// matching call when there is none yet.
	WaitS float64 `json:"wait_s,omitempty"`
}

// CallsResult is the answer of `calls`: matching records, oldest first.
type CallsResult struct {
	Calls []CallRecord `json:"calls"`
	// NextCursor is the cursor of the next poll: every call up to it has
	// been considered.
	NextCursor uint64 `json:"next_cursor"`
	// Dropped counts records lost since the daemon started because the
	// writer fell behind or the disk failed.
	Dropped uint64 `json:"dropped"`
}

// CallStats are counters and latency quantiles of a set of calls since
// the daemon started.
type CallStats struct {
	Calls uint64 `json:"calls"`
	// Errors counts failed calls by outcome (an error code or tool_error).
	Errors map[string]uint64 `json:"errors"`
	P50MS  float64           `json:"p50_ms"`
	P99MS  float64           `json:"p99_ms"`
}

// ToolCallStats are the CallStats of one tool or prompt.
type ToolCallStats struct {
	Kind string `json:"kind"`
	Tool string `json:"tool"`
	CallStats
}

// UpstreamCallStats are an upstream's CallStats and those of its tools, in
// an `mcp_status` row.
type UpstreamCallStats struct {
	CallStats
	Tools []ToolCallStats `json:"tools"`
}

// CallLogInfo describes the call log in `daemon_info`.
type CallLogInfo struct {
	Path string `json:"path"`
	// Args says whether argument values are kept ([daemon] call_log_args).
	Args    bool   `json:"args"`
	Written uint64 `json:"written"`
	Dropped uint64 `json:"dropped"`
	// Tools are the stats of every tool and prompt called since the start.
	Tools []ToolCallStats `json:"tools"`
}
