package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/facade"
	"github.com/harness-dev/harness/internal/mcp/toolsearch"
)

// Tool search (docs/design/mcp.md): a session in search mode lists these
// two and a few facade tools (searchListed), and reaches every other tool
// its grant covers through them, so an agent with hundreds of upstream
// tools pays for a few schemas in its context. Both are session tools, not control
// operations: they work on the session's own view.
const (
	// FindToolsName ranks the tools the session may call for a query.
	FindToolsName = "harness_find_tools"
	// CallToolName calls one of them by name.
	CallToolName = "harness_call_tool"

	defaultFindLimit = 5
	maxFindLimit     = 50
)

// ToolModes is an optional capability of an Authority: how a harness's
// sessions, and the operator token's, list tools. Without it every
// session lists everything.
type ToolModes interface {
	ToolMode(harness string) api.ToolMode
	OperatorToolMode() api.ToolMode
}

// toolMode is the session's mode in force; unattributed sessions list
// everything.
func (l *live) toolMode() api.ToolMode {
	tm, ok := l.m.auth.(ToolModes)
	switch {
	case !ok:
		return api.ToolsAll
	case l.id.Operator:
		return tm.OperatorToolMode()
	case l.id.Harness != "":
		return tm.ToolMode(l.id.Harness)
	}
	return api.ToolsAll
}

// searchListed are the facade tools a session in search mode lists (when
// its grant covers them) besides the two search tools: the fleet at a
// glance. The others are found by harness_find_tools and called directly
// or through harness_call_tool, under the same grant checks. The listing
// stays under 2 KB however many tools the upstreams have
// (TestScenario_SearchModeListingStaysSmall).
var searchListed = []string{"harness_list", "harness_describe"}

var searchTools = []*mcp.Tool{
	{
		Name:        FindToolsName,
		Description: "Find tools for a task described in words (upstream tools and the other harness_* fleet tools); returns the best matches with their inputSchema, to call with harness_call_tool.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","minLength":1,"description":"what you want to do"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"default":5}` +
			`},"required":["query"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	},
	{
		Name:        CallToolName,
		Description: "Call a tool harness_find_tools found; answers with that tool's result.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","minLength":1},` +
			`"arguments":{"type":"object","description":"as its inputSchema says"}` +
			`},"required":["name"],"additionalProperties":false}`),
	},
}

// isSearchTool reports whether name is one of the two search tools.
func isSearchTool(name string) bool { return name == FindToolsName || name == CallToolName }

// callable is one tool a session may call, with its class.
type callable struct {
	tool  *mcp.Tool
	class api.Class
}

// upstreamTools are the KEY__tool tools grant covers, in the broker's
// order; ones outside their namespace are skipped with a warning.
func (l *live) upstreamTools(grant api.Grant) []callable {
	if l.m.ups == nil {
		return nil
	}
	var out []callable
	for _, ut := range l.m.ups.Tools(l.project()) {
		t := ut.Tool
		if t == nil || facade.Reserved(t.Name) || !strings.HasPrefix(t.Name, ut.Key+broker.Separator) {
			l.m.log.Warn("skipping upstream tool outside the KEY__tool namespace", logkey.Session, l.label(), logkey.Tool, toolName(t))
			continue
		}
		if grant.Allows(ut.Key, ut.Class) {
			out = append(out, callable{t, ut.Class})
		}
	}
	return out
}

// findArgs are harness_find_tools' arguments.
type findArgs struct {
	Query string `json:"query"`
	Limit *int   `json:"limit"`
}

// found is one tool of harness_find_tools' answer.
type found struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Class       api.Class       `json:"class"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// findResult is harness_find_tools' answer.
type findResult struct {
	Tools []found `json:"tools"`
	// Searched is how many tools the session may call, of which Tools
	// are the best matches.
	Searched int `json:"searched"`
}

// findTools ranks every tool the session may call now (facade and
// upstream, within its grant) for the query.
func (l *live) findTools(ctx context.Context, raw json.RawMessage) *mcp.CallToolResult {
	noteClass(ctx, api.Read)
	var a findArgs
	if err := strictDecode(raw, &a); err != nil {
		return l.refuse(FindToolsName, errcode.Errorf(errcode.InvalidArgument, "%s: %v", FindToolsName, err))
	}
	limit := defaultFindLimit
	switch {
	case strings.TrimSpace(a.Query) == "":
		return l.refuse(FindToolsName, errcode.Errorf(errcode.InvalidArgument, "%s: query is required", FindToolsName))
	case a.Limit != nil && (*a.Limit < 1 || *a.Limit > maxFindLimit):
		return l.refuse(FindToolsName, errcode.Errorf(errcode.InvalidArgument, "%s: limit %d is out of range 1..%d", FindToolsName, *a.Limit, maxFindLimit))
	case a.Limit != nil:
		limit = *a.Limit
	}
	if l.m.ups != nil && l.foundOnce.CompareAndSwap(false, true) {
		// As a first tools/list does: upstreams starting with the agent
		// should be found, not missed.
		wctx, cancel := context.WithTimeout(ctx, FirstListWait)
		l.m.ups.WaitStarting(wctx, l.project())
		cancel()
	}

	grant := l.grant()
	var pool []callable
	for _, t := range facade.Tools() {
		if grant.Allows(api.FacadeNamespace, t.Class) {
			pool = append(pool, callable{facadeTool(t), t.Class})
		}
	}
	pool = append(pool, l.upstreamTools(grant)...)
	docs := make([]toolsearch.Doc, len(pool))
	for i, c := range pool {
		schema, _ := json.Marshal(c.tool.InputSchema) // what the tool lists; nil on failure is fine
		docs[i] = toolsearch.DocOf(c.tool.Name, c.tool.Description, schema)
	}
	res := findResult{Tools: []found{}, Searched: len(pool)}
	for _, h := range toolsearch.New(docs).Search(a.Query, limit) {
		c := pool[h.Doc]
		schema, err := json.Marshal(c.tool.InputSchema)
		if err != nil {
			continue
		}
		res.Tools = append(res.Tools, found{Name: c.tool.Name, Description: c.tool.Description, Class: c.class, InputSchema: schema})
	}
	out, err := successResult("", res)
	if err != nil {
		return errorResult(fmt.Errorf("%s: %w: %w", FindToolsName, err, errcode.ErrInternal))
	}
	return out
}

// callArgs are harness_call_tool's arguments.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callVia runs harness_call_tool: the named tool's call, exactly as if the
// client had called it directly (the same scope checks, the same answer),
// recorded in the call log under the tool's own name.
func (l *live) callVia(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage) *mcp.CallToolResult {
	var a callArgs
	if err := strictDecode(raw, &a); err != nil {
		return l.refuse(CallToolName, errcode.Errorf(errcode.InvalidArgument, "%s: %v", CallToolName, err))
	}
	switch {
	case a.Name == "":
		return l.refuse(CallToolName, errcode.Errorf(errcode.InvalidArgument, "%s: name is required", CallToolName))
	case isSearchTool(a.Name):
		return l.refuse(CallToolName, errcode.Errorf(errcode.InvalidArgument, "%s: %s is called directly", CallToolName, a.Name))
	}
	if t := bytes.TrimSpace(a.Arguments); len(t) > 0 && !bytes.Equal(t, []byte("null")) && t[0] != '{' {
		return l.refuse(CallToolName, errcode.Errorf(errcode.InvalidArgument, "%s: arguments must be an object", CallToolName))
	}
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok {
		n.tool = a.Name
	}
	inner := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.CallToolParamsRaw{
		Meta: req.Params.Meta, Name: a.Name, Arguments: a.Arguments,
	}}
	return l.dispatch(ctx, inner)
}

// strictDecode decodes an argument object, refusing unknown keys.
func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(objectArgs(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments: %s", errcode.Clip(err.Error(), 256))
	}
	return nil
}
