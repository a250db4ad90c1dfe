package api

// CallerKind says through which door an operation arrives.
type CallerKind string

const (
	// Operator is the CLI over the control socket: the socket's own authority.
	Operator CallerKind = "operator"
	// Session is an MCP session (stdio bridge or HTTP). Its scope has already
	// been checked by internal/mcp/session before the operation runs.
	Session CallerKind = "session"
	// Dashboard is a browser signed in to the web dashboard (docs/design/web.md).
	// Its token's grant has already been checked by internal/web.
	Dashboard CallerKind = "dashboard"
)

// Caller identifies who asks for an operation, for logs and run causes.
type Caller struct {
	Kind CallerKind
	// Harness is the attributed harness of an MCP session, "" when unattributed.
	Harness string
}
