// Package api is the wire of the control plane: the names of the control
// operations, the argument and result types the CLI, the socket and MCP
// share, who calls (Caller), the scope classes of MCP tools, and the events
// of the subscription. It is a leaf: it imports only the standard library,
// so the CLI and the MCP packages can speak the wire without importing the
// engine (internal/control, internal/supervise).
//
// JSON shapes here are a contract (docs/design/wire.md): tests and tools outside
// the repository read them. Change a field only on purpose.
package api
