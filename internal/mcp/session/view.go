package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// defaultAllow is mcp_allow when a harness has none (DESIGN §4).
var defaultAllow = []string{string(api.Read)}

// scope is the set of classes the session may use right now. It is computed
// on every call and every refresh from the live config.
func (l *live) scope() map[api.Class]bool {
	if l.id.Harness == "" {
		s := map[api.Class]bool{api.Read: true}
		if l.id.AllowControl {
			s[api.Write] = true
		}
		return s
	}
	var allow []string
	if l.m.auth != nil {
		if h, ok := l.m.auth.ResolveToken(l.id.Token); l.id.Token != "" && (!ok || h != l.id.Harness) {
			// The run that owned the token ended: nothing is granted.
			return map[api.Class]bool{}
		}
		allow = l.m.auth.Allowed(l.id.Harness)
	}
	if allow == nil {
		// A harness gone from the config keeps the default grant until its
		// run (and with it the token) ends; an explicit empty list grants
		// nothing.
		allow = defaultAllow
	}
	s := make(map[api.Class]bool, len(allow))
	for _, c := range allow {
		s[api.Class(c)] = true
	}
	return s
}

// anyGrant reports whether a scope grants anything at all.
func anyGrant(s map[api.Class]bool) bool {
	for _, on := range s {
		if on {
			return true
		}
	}
	return false
}

// project is the project whose upstreams the session reaches.
func (l *live) project() string {
	if l.id.Harness == "" || l.m.auth == nil {
		return ""
	}
	return l.m.auth.Project(l.id.Harness)
}

// wanted is one tool or prompt the session should list.
type wanted[T any] struct {
	fingerprint string
	item        T
}

// refresh brings the server's tool and prompt lists in line with what the
// session may see now. Only differences touch the server, so a session whose
// view did not change gets no list_changed notification.
func (l *live) refresh() {
	l.viewMu.Lock()
	defer l.viewMu.Unlock()
	l.refreshTools()
	l.refreshPrompts()
}

func (l *live) refreshTools() {
	want := map[string]wanted[*mcp.Tool]{}
	scope := l.scope()
	for _, t := range facade.Tools() {
		if scope[t.Class] {
			want[t.Name] = wanted[*mcp.Tool]{"facade", facadeTool(t)}
		}
	}
	// Upstream tools are not classified; a session granted nothing (an
	// explicit mcp_allow = [], or a revoked token) sees none of them.
	if l.m.ups != nil && anyGrant(scope) {
		for _, t := range l.m.ups.Tools(l.project()) {
			if t == nil || facade.Reserved(t.Name) || !strings.Contains(t.Name, "__") {
				l.m.log.Warn("skipping upstream tool outside the KEY__tool namespace", "session", l.label(), "tool", toolName(t))
				continue
			}
			b, err := json.Marshal(t)
			if err != nil {
				l.m.log.Warn("skipping upstream tool that does not marshal", "session", l.label(), "tool", t.Name, "error", err)
				continue
			}
			want[t.Name] = wanted[*mcp.Tool]{"upstream:" + string(b), t}
		}
	}

	var gone []string
	for name := range l.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(l.tools, name)
		}
	}
	if len(gone) > 0 {
		l.server.RemoveTools(gone...)
	}
	for name, w := range want {
		if l.tools[name] == w.fingerprint {
			continue
		}
		if err := l.addTool(w.item); err != nil {
			l.m.log.Warn("skipping tool the MCP server refuses", "session", l.label(), "tool", name, "error", err)
			if _, had := l.tools[name]; had {
				// The old definition no longer matches its upstream.
				delete(l.tools, name)
				l.server.RemoveTools(name)
			}
			continue
		}
		l.tools[name] = w.fingerprint
	}
}

// addTool registers t; the go-sdk panics on schemas it cannot accept (for
// example a root that is not "type":"object"), which must cost one tool,
// not the daemon.
func (l *live) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("session: add tool %q: %v", t.Name, r)
		}
	}()
	l.server.AddTool(t, l.toolHandler)
	return nil
}

// toolHandler is reached only if the call middleware is bypassed; it
// dispatches the same way so the rules hold either way.
func (l *live) toolHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return l.callTool(ctx, req), nil
}

func facadeTool(t facade.Tool) *mcp.Tool {
	return &mcp.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.InputSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.Class == api.Read},
	}
}

func toolName(t *mcp.Tool) string {
	if t == nil {
		return "<nil>"
	}
	return t.Name
}

func (l *live) refreshPrompts() {
	want := map[string]wanted[*mcp.Prompt]{}
	if ps := l.m.currentPrompts(); ps != nil {
		for _, p := range ps.Prompts() {
			if p == nil {
				continue
			}
			b, err := json.Marshal(p)
			if err != nil {
				l.m.log.Warn("skipping prompt that does not marshal", "session", l.label(), "prompt", p.Name, "error", err)
				continue
			}
			want[p.Name] = wanted[*mcp.Prompt]{string(b), p}
		}
	}
	var gone []string
	for name := range l.prompts {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(l.prompts, name)
		}
	}
	if len(gone) > 0 {
		l.server.RemovePrompts(gone...)
	}
	for name, w := range want {
		if l.prompts[name] == w.fingerprint {
			continue
		}
		l.server.AddPrompt(w.item, l.getPrompt)
		l.prompts[name] = w.fingerprint
	}
}

func (m *Manager) currentPrompts() Prompts {
	if m.prompts == nil {
		return nil
	}
	return m.prompts()
}

// getPrompt renders a prompt from the current set; a failure is a JSON-RPC
// invalid-params error, as the go-sdk answers an unknown prompt.
func (l *live) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ps := l.m.currentPrompts()
	if ps == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	res, err := ps.Get(req.Params.Name, req.Params.Arguments)
	if err != nil {
		l.m.log.Info("prompt refused", "session", l.label(), "prompt", req.Params.Name, "error", err)
		// The prompts package names the prompt and the argument already.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %q: no result", req.Params.Name)}
	}
	return res, nil
}
