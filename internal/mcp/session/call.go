package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

const methodCallTool = "tools/call"

// callMiddleware answers every tools/call itself, so that a tool missing from
// the server's list (unknown, hidden, or not yet added by a Refresh) is a
// tool result with a code rather than the go-sdk's JSON-RPC "unknown tool"
// error, which some clients treat as fatal. The go-sdk runs each call on its
// own goroutine, so calls in one session stay concurrent.
func (l *live) callMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if gp, ok := req.(*mcp.GetPromptRequest); ok && method == methodGetPrompt && gp.Params != nil {
			// Also a prompt the server does not list (hidden, not granted):
			// the refusal says why, not just "unknown prompt".
			return l.getPrompt(ctx, gp)
		}
		if rr, ok := req.(*mcp.ReadResourceRequest); ok && method == methodReadResource && rr.Params != nil {
			// Also a URI the server does not list (a template's expansion,
			// hidden, not granted): the upstream's answer, or why not.
			return l.readResource(ctx, rr)
		}
		if method != methodCallTool {
			return next(ctx, method, req)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if tr, ok := taskOf(call); ok {
			return l.startTask(ctx, call, tr)
		}
		res := l.callTool(ctx, call)
		if res.InputRequests != nil {
			return &inputRequired{res}, nil // a stateless call's upstream asks (rounds.go)
		}
		return res, nil
	}
}

// callTool decides and runs one call. It never returns nil.
func (l *live) callTool(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	ctx, cancel := l.m.bound(ctx)
	defer cancel()
	return l.dispatch(ctx, req)
}

// dispatch runs one call, directly or for harness_call_tool. It never
// returns nil.
func (l *live) dispatch(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	name := req.Params.Name
	args := objectArgs(req.Params.Arguments)

	if isSearchTool(name) {
		switch {
		case l.toolMode() != api.ToolsSearch:
			return l.refuse(name, errcode.Errorf(errcode.UnknownTool, "tool %s: this session lists every tool (mcp_tools = \"all\"); call them directly", name))
		case name == FindToolsName:
			return l.findTools(ctx, args)
		}
		return l.callVia(ctx, req, args)
	}
	if t, ok := facade.Lookup(name); ok {
		return l.callFacade(ctx, t, args)
	}
	if facade.Reserved(name) || !strings.Contains(name, "__") {
		return l.refuse(name, errcode.Errorf(errcode.UnknownTool, "tool %s", errcode.Quote(name)))
	}
	if l.m.ups == nil {
		key, _, _ := strings.Cut(name, "__")
		return l.refuse(name, errcode.Errorf(errcode.UnknownNamespace, "tool %s: namespace %s (no upstreams)", errcode.Quote(name), errcode.Quote(key)))
	}
	return l.callUpstream(ctx, req, name, args)
}

// callFacade checks scope before anything else runs, so a refused write
// changes nothing.
func (l *live) callFacade(ctx context.Context, t facade.Tool, args json.RawMessage) *mcp.CallToolResult {
	if err := l.permit(l.grant(), t.Name, api.FacadeNamespace, t.Class); err != nil {
		return l.refuse(t.Name, err)
	}
	if err := t.Validate(args); err != nil {
		return l.refuse(t.Name, err)
	}
	if t.Op == api.OpDelegate {
		l.linkDelegation(ctx, args)
	}
	res, err := l.m.ops.Call(ctx, l.caller(), t.Op, args)
	if err != nil {
		err = fmt.Errorf("%s: %w", t.Name, err)
		l.m.log.Info("tool call failed", logkey.Session, l.label(), logkey.Tool, t.Name, logkey.Code, errcode.Of(err), logkey.Err, err)
		return errorResult(err)
	}
	out, err := successResult(t.ResultKey, res)
	if err != nil {
		err = fmt.Errorf("%s: %w: %w", t.Name, err, errcode.ErrInternal)
		l.m.log.Error("tool result does not marshal", logkey.Session, l.label(), logkey.Tool, t.Name, logkey.Err, err)
		return errorResult(err)
	}
	return out
}

// callUpstream proxies a KEY__tool call to the broker, telling an unknown
// namespace from an unknown tool in a known one. The broker checks the
// session's grant against the class of the tool it resolves, before
// anything reaches the upstream.
func (l *live) callUpstream(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage) *mcp.CallToolResult {
	grant := l.grant()
	project := l.project()
	key, _, _ := strings.Cut(name, "__")
	// An unknown tool of a known namespace is the broker's to tell: an
	// upstream that is down or starting has no tool list yet, and then the
	// answer is upstream_unavailable with its next attempt.
	if nsKnown, _ := l.m.ups.Known(project, name); !nsKnown {
		return l.untyped(name, l.refuse(name, errcode.Errorf(errcode.UnknownNamespace, "tool %s: namespace %s", errcode.Quote(name), errcode.Quote(key))))
	}
	notify := func(ctx context.Context, p *mcp.ProgressNotificationParams) error {
		return req.Session.NotifyProgress(ctx, p)
	}
	permit := func(c api.Class) error { noteClass(ctx, c); return l.permit(grant, name, key, c) }
	if req.Session != nil {
		// The upstream's elicitation, sampling and log messages during the
		// call are this session's (broker/back.go).
		ctx = broker.WithBack(ctx, sessionBack{ss: req.Session, label: l.label()})
	}
	ctx = broker.WithCaller(ctx, l.id.Harness) // its mcp_rate
	call := func(ctx context.Context) *mcp.CallToolResult {
		res, err := l.m.ups.Call(ctx, project, name, args, permit, req.Params.GetProgressToken(), notify)
		return l.upstreamResult(name, res, err)
	}
	if l.statelessCall(req) {
		// No session to ask the client on: the upstream's questions come
		// back as input_required results (rounds.go).
		return l.callRounds(ctx, req, call)
	}
	return call(ctx)
}

// upstreamResult is the session's answer to an upstream call that came
// back with res or err. It never returns nil.
func (l *live) upstreamResult(name string, res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	if errcode.Of(err) == errcode.NotPermitted {
		return l.untyped(name, l.refuse(name, err))
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
		level := slog.LevelInfo
		if errcode.Of(err) == errcode.RateLimited {
			level = slog.LevelDebug // a loop over its limit would flood the log; the call log counts them
		}
		l.m.log.Log(context.Background(), level, "upstream call failed", logkey.Session, l.label(), logkey.Tool, errcode.Clip(name, 128), logkey.Code, errcode.Of(err), logkey.Err, err)
		return l.untyped(name, errorResult(err))
	}
	if res == nil {
		err := fmt.Errorf("%s: upstream returned no result: %w", name, errcode.ErrInternal)
		l.m.log.Error("upstream call returned nothing", logkey.Session, l.label(), logkey.Tool, errcode.Clip(name, 128))
		return l.untyped(name, errorResult(err))
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // the protocol requires an array
	}
	return res
}

// refuse logs a call that was answered without running anything.
func (l *live) refuse(tool string, err error) *mcp.CallToolResult {
	l.m.log.Info("tool call refused", logkey.Session, l.label(), logkey.Tool, errcode.Clip(tool, 128), logkey.Code, errcode.Of(err), logkey.Err, err)
	return errorResult(err)
}

// bound ties a call's context to the Manager's, so Close cancels it.
func (m *Manager) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(m.ctx, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// objectArgs makes absent or null arguments {}: control operations take an
// object, and a nil RawMessage would reach them as null.
func objectArgs(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage(`{}`)
	}
	return raw
}

// successResult renders an operation's result as JSON text plus the same
// object as structuredContent, which must be an object: arrays are wrapped
// under key (or "result" for an operation without one).
func successResult(key string, res any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("marshal result: %w", err)
	}
	if key != "" && bytes.Equal(b, []byte("null")) {
		b = []byte("[]") // a nil slice is an empty list, not a missing one
	}
	if key != "" || !bytes.HasPrefix(b, []byte("{")) {
		if key == "" {
			key = "result"
		}
		if b, err = json.Marshal(map[string]json.RawMessage{key: b}); err != nil {
			return nil, fmt.Errorf("wrap result: %w", err)
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// errorResult is the "failures are results" shape: isError with
// {"code","message"} as both text and structuredContent.
func errorResult(err error) *mcp.CallToolResult {
	body := errcode.BodyOf(err)
	b, mErr := json.Marshal(body)
	if mErr != nil {
		// Two strings always marshal; keep a readable answer regardless.
		b = []byte(fmt.Sprintf(`{"code":%q,"message":%q}`, body.Code, body.Message))
	}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: body,
	}
}
