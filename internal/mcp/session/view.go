package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

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
	l.refreshResources()
}

func (l *live) refreshTools() {
	want := map[string]wanted[*mcp.Tool]{}
	grant := l.grant()
	search := l.toolMode() == api.ToolsSearch
	for _, t := range facade.Tools() {
		// In search mode the rest of the facade is found and called like
		// any tool: listing it all would cost every session about 7 KB.
		if grant.Allows(api.FacadeNamespace, t.Class) && (!search || slices.Contains(searchListed, t.Name)) {
			want[t.Name] = wanted[*mcp.Tool]{"facade", facadeTool(t)}
		}
	}
	if search {
		// Upstream tools are found and called through the search tools.
		if !grant.Empty() {
			for _, t := range searchTools {
				tc := *t // each server keeps its own
				want[t.Name] = wanted[*mcp.Tool]{"search", &tc}
			}
		}
	} else {
		for _, c := range l.upstreamTools(grant) {
			t := c.tool
			b, err := json.Marshal(t)
			if err != nil {
				l.m.log.Warn("skipping upstream tool that does not marshal", logkey.Session, l.label(), logkey.Tool, t.Name, logkey.Err, err)
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
			l.m.log.Warn("skipping tool the MCP server refuses", logkey.Session, l.label(), logkey.Tool, name, logkey.Err, err)
			if _, had := l.tools[name]; had {
				// The old definition no longer matches its upstream.
				delete(l.tools, name)
				l.server.RemoveTools(name)
			}
			continue
		}
		l.tools[name] = w.fingerprint
		if w.item.OutputSchema != nil {
			l.typed(name)
		}
		l.headed(name, strings.Contains(w.fingerprint, `"x-mcp-header"`))
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

// facadeTool is t as a session lists it. Only a read tool carries
// annotations (readOnlyHint): a write or input tool's would be
// {"idempotentHint":false,"readOnlyHint":false}, the defaults, bytes in
// every listing that tell a model nothing.
func facadeTool(t facade.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	if t.Class == api.Read {
		mt.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	}
	return mt
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
				l.m.log.Warn("skipping prompt that does not marshal", logkey.Session, l.label(), logkey.Prompt, p.Name, logkey.Err, err)
				continue
			}
			want[p.Name] = wanted[*mcp.Prompt]{string(b), p}
		}
	}
	if up, ok := l.m.ups.(UpstreamPrompts); ok {
		grant := l.grant()
		for _, p := range up.Prompts(l.project()) {
			if _, markdown := want[p.Prompt.Name]; markdown || !grant.Allows(p.Key, api.Read) {
				continue
			}
			b, err := json.Marshal(p.Prompt)
			if err != nil {
				continue
			}
			want[p.Prompt.Name] = wanted[*mcp.Prompt]{"upstream:" + string(b), p.Prompt}
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
func (l *live) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ps := l.m.currentPrompts()
	if res, handled, err := l.getUpstreamPrompt(ctx, ps, req); handled {
		return res, err
	}
	if ps == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %s", errcode.Quote(req.Params.Name))}
	}
	res, err := ps.Get(req.Params.Name, req.Params.Arguments)
	if err != nil {
		l.m.log.Info("prompt refused", logkey.Session, l.label(), logkey.Prompt, req.Params.Name, logkey.Err, err)
		// The prompts package names the prompt and the argument already.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %q: no result", req.Params.Name)}
	}
	return res, nil
}
