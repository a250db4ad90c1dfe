package api

import (
	"fmt"
	"strings"
)

// Class is the scope class of an MCP tool: what a session must be granted
// (mcp_allow, --allow-control, the operator token's grant) to see and call
// it (docs/design/mcp.md).
type Class string

const (
	// Read tools report state and change nothing.
	Read Class = "read"
	// Write tools change the state of the fleet or of an upstream.
	Write Class = "write"
	// Input tools type into a harness's terminal. Typing into an agent can
	// make it run anything with its permissions, which is more than
	// restarting it, so input is never implied by write (docs/design/mcp.md).
	Input Class = "input"
)

// Classes are the known classes, in the order they are usually granted.
func Classes() []Class { return []Class{Read, Write, Input} }

// ParseClass returns the class named s, or an error naming the valid ones.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes() {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown class %q (want %s)", s, orList(Classes()))
}

// orList renders classes as `"read" or "write"`, `"a", "b" or "c"`.
func orList(cs []Class) string {
	var b strings.Builder
	for i, c := range cs {
		switch {
		case i == 0:
		case i == len(cs)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", c)
	}
	return b.String()
}
