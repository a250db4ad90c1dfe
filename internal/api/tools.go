package api

// ToolMode is how a session's tools are listed ([harness.NAME] mcp_tools,
// [daemon] mcp_http_operator_tools; docs/design/mcp.md).
type ToolMode string

// The tool modes. The zero value lists everything, as ToolsAll does.
const (
	// ToolsAll lists every tool the grant covers.
	ToolsAll ToolMode = "all"
	// ToolsSearch lists the facade tools plus harness_find_tools and
	// harness_call_tool; upstream tools are found and called through them.
	ToolsSearch ToolMode = "search"
)

// Valid reports whether m is a tool mode ("" counts as all).
func (m ToolMode) Valid() bool { return m == "" || m == ToolsAll || m == ToolsSearch }
