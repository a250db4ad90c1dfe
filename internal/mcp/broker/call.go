package broker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/traceparent"
)

// Tool is one tool the broker serves: the namespaced copy sessions list,
// the upstream key it belongs to (its namespace in a grant) and its class.
type Tool struct {
	Tool  *mcp.Tool
	Key   string
	Class api.Class
}

// Tools returns the namespaced tools a session of project may be shown:
// global upstreams for project "", global plus that project's otherwise,
// excluded tools left out, each with its class. Input schemas are the
// upstreams' own (normalised only when their root is not an object
// schema) and annotations are passed through unchanged. The mcp.Tools are
// fresh copies; their schemas are shared and must be treated as read-only.
func (b *Broker) Tools(project string) []Tool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Tool
	for _, u := range b.visibleAll(project) {
		for name, t := range u.tools {
			c := *t
			out = append(out, Tool{Tool: &c, Key: u.key, Class: u.classes[name].Class})
		}
	}
	slices.SortFunc(out, func(x, y Tool) int { return strings.Compare(x.Tool.Name, y.Tool.Name) })
	return out
}

// Permit decides whether a call may go ahead once Call has resolved its
// tool: class is the tool's class, or "" when the upstream lists no such
// tool (not yet listed, unknown, or excluded). A non-nil error refuses the
// call before anything reaches the upstream; Call returns it unchanged.
// It runs without the broker's lock and must not block.
type Permit func(class api.Class) error

// Known reports whether name's namespace is an upstream visible to project
// and whether that upstream lists the tool. toolKnown is false for every
// tool of an upstream that has never been listed; Call then answers
// upstream_unavailable, so sessions should hand every call in a known
// namespace to Call and let it decide.
func (b *Broker) Known(project, name string) (namespaceKnown, toolKnown bool) {
	key, tool, ok := SplitName(name)
	if !ok {
		return false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.visible(project, key)
	if u == nil {
		return false, false
	}
	_, toolKnown = u.tools[tool]
	return true, toolKnown
}

// Call proxies a tools/call of the namespaced name for a session of
// project, if permit (nil: no check) allows the tool's class at the moment
// the call is resolved. args is the raw arguments object (empty or null
// means {}).
// When progressToken is non-nil the upstream's progress notifications for
// this call reach notify, carrying progressToken, until Call returns; those
// the upstream sent before its result all reach notify before Call returns
// (waiting at most drainTimeout for them).
//
// Errors wrap errcode sentinels: ErrUnknownNamespace (no visible upstream
// KEY), ErrUnknownTool, ErrUpstreamUnavailable (down, starting, or the
// connection broke mid-call), ErrInvalidArgument (args not JSON). A
// JSON-RPC error from the upstream comes back as an error naming the
// upstream and keeping its message; an excluded tool is ErrUnknownTool
// saying so; an isError result is returned with
// "upstream KEY: " prefixed to its first text item.
func (b *Broker) Call(ctx context.Context, project, name string, args json.RawMessage, permit Permit, progressToken any,
	notify func(context.Context, *mcp.ProgressNotificationParams) error) (*mcp.CallToolResult, error) {
	key, tool, ok := SplitName(name)
	if !ok {
		return nil, fmt.Errorf("broker: tool %s: no KEY__ namespace: %w", errcode.Quote(name), errcode.ErrUnknownNamespace)
	}
	args, err := callArgs(key, tool, args)
	if err != nil {
		return nil, err
	}

	r, err := b.resolve(ctx, project, name, key, tool, permit)
	if err != nil {
		return nil, err
	}
	return b.callResolved(ctx, r, key, tool, args, progressToken, notify)
}

// callResolved is Call once its upstream is resolved and the call
// permitted: through the go-sdk client session.
func (b *Broker) callResolved(ctx context.Context, r resolved, key, tool string, args json.RawMessage, progressToken any,
	notify func(context.Context, *mcp.ProgressNotificationParams) error) (*mcp.CallToolResult, error) {
	u, cs, sem, c, timeout := r.u, r.cs, r.sem, r.c, r.timeout
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		return nil, fmt.Errorf("broker: upstream %s: tools/call %s: waiting for a free slot: %w", key, tool, ctx.Err())
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, &callTimeoutError{key: key, after: timeout})
		defer cancel()
	}
	if back, ok := ctx.Value(backKey{}).(Back); ok {
		defer b.inFlight(u, back)()
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if tp, ok := traceparent.From(ctx); ok {
		params.Meta = mcp.Meta{traceparent.Header: tp.String()}
	}
	var t Transport
	if c != nil {
		t = c.t
	}
	net, _ := t.(networked)
	var route *progressRoute
	if progressToken != nil && notify != nil {
		if net != nil {
			notify = net.scrubProgress(notify)
		}
		tok, r, done := b.route(ctx, key, progressToken, notify)
		defer done()
		params.SetProgressToken(tok)
		route = r
	}
	var classify func(context.Context, *Broker, *conn, string, string, error) (error, bool)
	if net != nil {
		ctx, classify = net.watchCall(ctx)
	}
	// The go-sdk sends notifications/cancelled upstream when ctx ends
	// while the call is in flight.
	res, err := cs.CallTool(ctx, params)
	var rpc *jsonrpc.Error
	if route != nil && (err == nil || errors.As(err, &rpc)) {
		// The upstream answered: whatever progress it sent first has been
		// read but may still wait in the client's notification queue.
		b.drain(ctx, route, tool)
	}
	if err != nil {
		if classify != nil {
			if rerr, ok := classify(ctx, b, c, key, tool, err); ok {
				return nil, rerr
			}
		}
		return nil, b.callErr(ctx, key, tool, err)
	}
	if res == nil {
		return nil, fmt.Errorf("broker: upstream %s: tools/call %s: empty result: %w", key, tool, errcode.ErrInternal)
	}
	if f, ok := t.(resultFilter); ok {
		if res, err = f.filterResult(key, res); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		attribute(res, key, tool)
	}
	return res, nil
}

// callArgs is a call's arguments as they go upstream: empty or null is
// {}, anything else must be JSON.
func callArgs(key, tool string, args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(args) {
		return nil, fmt.Errorf("broker: upstream %s: tools/call %s: arguments are not valid JSON: %w", key, tool, errcode.ErrInvalidArgument)
	}
	return args, nil
}

// resolved is what a call needs of its upstream, read under the lock at
// the moment the call is resolved.
type resolved struct {
	u       *upstream
	class   api.Class
	cs      *mcp.ClientSession
	sem     chan struct{}
	c       *conn
	timeout time.Duration
}

// resolve finds name's upstream for a session of project and checks the
// call may go ahead: permit (nil: no check) against the tool's class, then
// that the tool is not quarantined, is served and the upstream connected,
// and last that the rate limits admit it (gateway.go): only a call that
// would reach the upstream takes a token.
func (b *Broker) resolve(ctx context.Context, project, name, key, tool string, permit Permit) (resolved, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return resolved{}, fmt.Errorf("broker: closed: %w", errcode.ErrUpstreamUnavailable)
	}
	u := b.visible(project, key)
	if u == nil {
		b.mu.Unlock()
		return resolved{}, fmt.Errorf("broker: tool %s: no upstream %s visible here: %w", errcode.Quote(name), errcode.Quote(key), errcode.ErrUnknownNamespace)
	}
	_, listed := u.tools[tool]
	var class api.Class
	if listed {
		class = u.classes[tool].Class
	}
	excluded := u.classes[tool].Why == api.WhyExcluded
	r := resolved{u: u, class: class, cs: u.session, sem: u.sem, c: u.conn, timeout: cmp.Or(u.callTimeout, b.opts.CallTimeout)}
	var unavailable error // built only for a call it answers
	if r.cs == nil {
		unavailable = unavailableErr(u)
	}
	everListed := u.listed
	held := quarantined(u, tool)
	caller, _ := ctx.Value(callerKey{}).(string)
	limits := b.limitsLocked(u, tool, caller)
	b.mu.Unlock()
	if permit != nil {
		// Judged on what was resolved above, together with cs: a re-list
		// that changes the class afterwards cannot let this call through.
		if err := permit(class); err != nil {
			return resolved{}, err
		}
	}
	switch {
	case held != nil:
		return resolved{}, held
	case excluded:
		return resolved{}, fmt.Errorf("broker: upstream %s: tool %q is hidden by [mcp.%s] exclude_tools: %w", key, tool, key, errcode.ErrUnknownTool)
	case !listed && (everListed || r.cs != nil):
		return resolved{}, fmt.Errorf("broker: upstream %s: no tool %s: %w", key, errcode.Quote(tool), errcode.ErrUnknownTool)
	case r.cs == nil:
		// Down, or never listed yet: we cannot tell an unknown tool from
		// one we have not seen, and the outage is the real answer.
		return resolved{}, unavailable
	}
	if err := b.admit(limits, key, tool); err != nil {
		return resolved{}, err
	}
	return r, nil
}

// callTimeoutError ends a call that outlived its upstream's call timeout:
// the upstream is up but did not answer in time, which a caller can
// retry like an outage.
type callTimeoutError struct {
	key   string
	after time.Duration
}

func (e *callTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (call_timeout_s of [mcp.%s]); the call was cancelled upstream", e.after, e.key)
}

func (e *callTimeoutError) Unwrap() error { return errcode.ErrUpstreamUnavailable }

// callErr classifies a failed upstream call.
func (b *Broker) callErr(ctx context.Context, key, tool string, err error) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc) && rpc.Code == jsonl.CodeTooLarge:
		// Our transport's refusal, not the upstream's answer.
		b.log.Warn("broker: upstream result refused: too large", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, rpc.Message)
		return fmt.Errorf("broker: upstream %s: tools/call %s: %s (max_result_bytes of [mcp.%s]): %w", key, tool, rpc.Message, key, errcode.ErrUpstreamUnavailable)
	case errors.As(err, &rpc):
		b.log.Info("broker: upstream returned an error", logkey.Upstream, key, logkey.Tool, tool, logkey.Code, rpc.Code, logkey.Message, rpc.Message)
		return &RPCError{Key: key, Tool: tool, Err: rpc}
	case errors.As(context.Cause(ctx), new(*callTimeoutError)):
		return b.stopped(key, tool, context.Cause(ctx))
	case ctx.Err() != nil:
		return b.stopped(key, tool, ctx.Err())
	default:
		// Anything else is the connection failing under the call, in
		// practice the upstream process dying.
		b.log.Warn("broker: upstream call failed", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, err)
		return fmt.Errorf("broker: upstream %s: tools/call %s: %v: %w", key, tool, err, errcode.ErrUpstreamUnavailable)
	}
}

// stopped is why a call ended early: its timeout (why is the
// callTimeoutError) or its context (why is the context's error).
func (b *Broker) stopped(key, tool string, why error) error {
	if errors.As(why, new(*callTimeoutError)) {
		b.log.Warn("broker: upstream call timed out; cancelled upstream", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, why)
	} else {
		b.log.Info("broker: upstream call ended by its context", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, why)
	}
	return fmt.Errorf("broker: upstream %s: tools/call %s: %w", key, tool, why)
}

// RPCError is a JSON-RPC error an upstream answered a tools/call with.
// It reads "broker: upstream KEY: tools/call TOOL: <upstream message>".
type RPCError struct {
	Key  string
	Tool string
	Err  *jsonrpc.Error
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("broker: upstream %s: tools/call %s: %s", e.Key, e.Tool, e.Err.Message)
}

// Unwrap exposes the upstream's JSON-RPC error (code, message, data) and,
// for an invalid-params error, errcode.ErrInvalidArgument, so the caller
// gets the code that says "your arguments", not "operation failed".
func (e *RPCError) Unwrap() []error {
	if e.Err.Code == jsonrpc.CodeInvalidParams {
		return []error{e.Err, errcode.ErrInvalidArgument}
	}
	return []error{e.Err}
}

// attribute prefixes the first text item of an isError result with the
// upstream's key, keeping the upstream's own message after it.
func attribute(res *mcp.CallToolResult, key, tool string) {
	prefix := "upstream " + key + ": "
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = prefix + t.Text
			return
		}
	}
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: prefix + "tool " + tool + " failed"}}, res.Content...)
}

// unavailableErr says that u is down and when it is next tried. Caller
// holds b.mu.
func unavailableErr(u *upstream) error {
	if u.needsLogin != "" {
		return fmt.Errorf("broker: %s: %w", u.needsLogin, errcode.ErrUpstreamUnavailable)
	}
	if u.conn != nil && !u.conn.failed {
		return fmt.Errorf("broker: upstream %s is starting (not connected yet): %w", u.key, errcode.ErrUpstreamUnavailable)
	}
	return fmt.Errorf("broker: upstream %s is down (%s): %w", u.key, nextAttempt(u.nextRetry, time.Now()), errcode.ErrUpstreamUnavailable)
}

func nextAttempt(at, now time.Time) string {
	if at.IsZero() {
		return "next attempt not scheduled"
	}
	in := max(at.Sub(now).Round(time.Second), 0)
	return fmt.Sprintf("next attempt at %s / in %s", at.Format("15:04:05"), in)
}

// maskResult hides known secrets in a process upstream's result (see
// Options.Mask). A result without one is returned as it came.
func maskResult(res *mcp.CallToolResult, mask func(string) string, key string) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("broker: upstream %s: encode a result to mask it: %v: %w", key, err, errcode.ErrInternal)
	}
	clean := mask(string(raw))
	if clean == string(raw) {
		return res, nil
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal([]byte(clean), out); err != nil {
		return nil, fmt.Errorf("broker: upstream %s: a result carried a secret and could not be masked: %w", key, errcode.ErrInternal)
	}
	return out, nil
}
