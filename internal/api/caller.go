package api

import "strconv"

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

// Door is the way an operation came in, as the audit log names it.
type Door string

// The doors.
const (
	DoorCLI     Door = "cli"     // the control socket
	DoorMCP     Door = "mcp"     // an MCP session
	DoorPage    Door = "page"    // the web dashboard, signed in with a token
	DoorDevice  Door = "device"  // the web dashboard, a paired device
	DoorLink    Door = "link"    // an action link of a notification
	DoorTailnet Door = "tailnet" // the web dashboard, a tailnet login
	DoorSSH     Door = "ssh"     // the SSH bridge (harness --host)
	DoorWebhook Door = "webhook" // a webhook trigger
)

// Caller identifies who asks for an operation, for logs, run causes and
// the audit log.
type Caller struct {
	Kind CallerKind
	// Harness is the attributed harness of an MCP session, "" when unattributed.
	Harness string
	// Door and Actor name the caller in the audit log: Actor is
	// "device:NAME", "token:ID", "tailnet:LOGIN", "harness:NAME", "ssh:KEY-COMMENT" or
	// "cli:UID". Empty, they are derived from Kind (AuditDoor, AuditActor).
	Door  Door
	Actor string
}

// AuditDoor is c's door: Door, else the one its Kind comes through.
func (c Caller) AuditDoor() Door {
	if c.Door != "" {
		return c.Door
	}
	switch c.Kind {
	case Session:
		return DoorMCP
	case Dashboard:
		return DoorPage
	}
	return DoorCLI
}

// AuditActor is c's actor: Actor, else what its Kind says (uid is the
// daemon's user, the only one its socket admits).
func (c Caller) AuditActor(uid int) string {
	if c.Actor != "" {
		return c.Actor
	}
	switch c.Kind {
	case Session:
		if c.Harness != "" {
			return "harness:" + c.Harness
		}
		return "session"
	case Dashboard:
		return "token:operator"
	}
	return "cli:" + strconv.Itoa(uid)
}
