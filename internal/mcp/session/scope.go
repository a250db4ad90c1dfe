package session

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Grants of sessions whose grant is not configured (docs/design/mcp.md).
var (
	// readOnly is an unattributed session's grant, and a vanished
	// harness's until its token dies.
	readOnly = api.DefaultGrant()
	// allowControl is what --allow-control gives an unattributed session:
	// bare write, never input.
	allowControl = api.NewGrant(api.Scope{Class: api.Read}, api.Scope{Class: api.Write})
)

// grant is what the session may see and call right now. It is computed on
// every call and every refresh from the live config and token registry.
func (l *live) grant() api.Grant {
	switch {
	case l.id.Operator:
		if l.m.auth == nil {
			return readOnly
		}
		return l.m.auth.OperatorGrant()
	case l.id.Harness == "":
		if l.id.Bridge != nil {
			return *l.id.Bridge
		}
		if l.id.AllowControl {
			return allowControl
		}
		return readOnly
	case l.m.auth == nil:
		return readOnly
	}
	if h, ok := l.m.auth.ResolveToken(l.id.Token); l.id.Token != "" && (!ok || h != l.id.Harness) {
		// The run that owned the token ended: nothing is granted.
		return api.Grant{}
	}
	if g, ok := l.m.auth.Grant(l.id.Harness); ok {
		return g
	}
	// A harness gone from the config keeps the default grant until its run
	// (and with it the token) ends.
	return readOnly
}

// permit refuses tool (of namespace ns, class c) with not_permitted naming
// the grant it needs, unless g covers it. Class "" is a tool the broker
// does not list (yet): the session may learn that only if g covers
// something in ns.
func (l *live) permit(g api.Grant, tool, ns string, c api.Class) error {
	if c == "" {
		if len(g.Classes(ns)) > 0 {
			return nil
		}
		return errcode.Errorf(errcode.NotPermitted, "tool %s: this session is granted nothing in %s; %s", tool, ns, l.grantSource(g))
	}
	if g.Allows(ns, c) {
		return nil
	}
	need := api.Scope{Namespace: ns, Class: c}
	return errcode.Errorf(errcode.NotPermitted, "tool %s is %s: needs %s; %s", tool, c, need, l.grantSource(g))
}

// grantSource says where the session's grant comes from, so a refusal
// tells the operator what to change.
func (l *live) grantSource(g api.Grant) string {
	switch {
	case l.id.Operator:
		return fmt.Sprintf("the operator token's grant ([daemon] mcp_http_operator_allow) is %s", g)
	case l.id.Harness == "" && l.id.Bridge != nil:
		return fmt.Sprintf("this session comes through an SSH bridge whose --grant is %s", g)
	case l.id.Harness == "" && l.id.AllowControl:
		return "--allow-control grants read and write, never input"
	case l.id.Harness == "":
		return "this unattributed session was not started with --allow-control"
	case g.Empty():
		return fmt.Sprintf("harness %s is granted nothing (an empty mcp_allow, or its run ended)", l.id.Harness)
	case l.project() != "":
		return fmt.Sprintf("harness %s belongs to project %s, whose harnesses get read everywhere and write on their project's upstreams only: %s",
			l.id.Harness, l.project(), g)
	}
	return fmt.Sprintf("harness %s's mcp_allow is %s", l.id.Harness, g)
}

// project is the project whose upstreams the session reaches.
func (l *live) project() string {
	if l.id.Harness == "" || l.m.auth == nil {
		return ""
	}
	return l.m.auth.Project(l.id.Harness)
}

// typed records that the session was shown tool with an output schema.
// The client may keep that listing after the tool leaves the session's
// view (a narrowing), so the mark is never cleared.
// headed notes whether tool is listed with parameters carried in HTTP
// headers (x-mcp-header in its input schema), which the go-sdk checks
// against a request's Mcp-Param headers: the HTTP fast path leaves such
// a tool's calls to it.
func (l *live) headed(tool string, yes bool) {
	l.typedMu.Lock()
	defer l.typedMu.Unlock()
	if yes {
		if l.headedTools == nil {
			l.headedTools = map[string]bool{}
		}
		l.headedTools[tool] = true
	} else {
		delete(l.headedTools, tool)
	}
}

// isHeaded reports what headed noted of tool.
func (l *live) isHeaded(tool string) bool {
	l.typedMu.Lock()
	defer l.typedMu.Unlock()
	return l.headedTools[tool]
}

func (l *live) typed(tool string) {
	l.typedMu.Lock()
	defer l.typedMu.Unlock()
	l.typedTools[tool] = true
}

// untyped drops the structured body of an error result the session made
// itself for tool when the session was ever shown tool with an output
// schema: clients check structuredContent against that schema, also on
// errors (the TypeScript SDK does), and {code, message} does not match it.
// The body stays in the text content.
func (l *live) untyped(tool string, res *mcp.CallToolResult) *mcp.CallToolResult {
	l.typedMu.Lock()
	typed := l.typedTools[tool]
	l.typedMu.Unlock()
	if typed {
		res.StructuredContent = nil
	}
	return res
}
