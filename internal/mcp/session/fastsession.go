package session

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// The tools/call fast path of session-based Streamable HTTP (MCP
// 2025-11-25 and earlier, as the TypeScript SDK speaks). The go-sdk serves
// a session's POST by decoding it into its connection, handling it on a
// goroutine of its own and answering on an SSE stream, with a fresh 32 KiB
// decoder buffer per message: about twice a stateless fast call's daemon
// CPU. A tools/call to a listed upstream tool is answered here instead,
// from its bytes, as the socket's fast path answers it (same checks, same
// call-log row under the session's id); httpmcp writes the answer as one
// application/json response, which the spec lets a server send to any
// request.
//
// Only calls that need nothing of the session's streams are taken: the
// client declared neither elicitation nor sampling and set no log level,
// and the call asks for no progress. An upstream's request during such a
// call is refused as the go-sdk path refuses it for that client, so where
// a message goes never depends on which path served the call.

// SessionCall answers one tools/call of ss, an HTTP session of the server
// f was made for: the result object's bytes, ready to send under id, or ok
// false when the call is not the fast path's (nothing was done; the go-sdk
// serves it). traceHeader is the request's traceparent header. A
// notifications/cancelled naming id (Cancel) or the end of ctx stops it.
func (f *HTTPFast) SessionCall(ctx context.Context, ss *mcp.ServerSession, id jsonrpc.ID, traceHeader string, params json.RawMessage) (result []byte, ok bool) {
	l := f.l
	if l.shared || ss == nil || l.logLevelSet.Load() {
		return nil, false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation != nil || ip.Capabilities.Sampling != nil {
		return nil, false
	}
	var p fastParams
	if json.Unmarshal(params, &p) != nil || !fastMeta(p.Meta) || !l.fastTool(p.Name) || l.isHeaded(p.Name) {
		return nil, false
	}
	if bytes.Contains(p.Meta, []byte(`"`+taskMetaKey+`"`)) {
		return nil, false // a task (lifted by httpmcp, tasklift.go): the go-sdk's way
	}
	fc := &fastCall{}
	l.fast.mu.Lock()
	if l.fast.ended || l.fast.calls[id.Raw()] != nil {
		l.fast.mu.Unlock()
		return nil, false // an id still in flight: the go-sdk answers that
	}
	if l.fast.calls == nil {
		l.fast.calls = map[any]*fastCall{}
	}
	l.fast.calls[id.Raw()] = fc
	l.fast.wg.Add(1)
	l.fast.mu.Unlock()
	defer func() {
		l.fast.mu.Lock()
		delete(l.fast.calls, id.Raw())
		l.fast.mu.Unlock()
		l.fast.wg.Done()
	}()
	l.m.fastServed.Add(1)

	start := time.Now()
	note := &callNote{}
	if l.m.tracer != nil {
		ctx = l.traceCall(ctx, note, metaTraceParent(p.Meta), traceHeader)
	}
	ctx = broker.WithBack(ctx, sessionBack{ss: ss, label: l.label()})
	ctx = broker.WithCaller(ctx, l.id.Harness) // its mcp_rate
	name := p.Name
	key, _, _ := strings.Cut(name, "__")
	grant := l.grant()
	permit := func(c api.Class) error { note.class = c; return l.permit(grant, name, key, c) }
	ended := make(chan fastEnd, 1)
	stop := f.fu.StartFast(ctx, l.project(), name, objectArgs(p.Arguments), permit, func(fr broker.FastResult, err error) {
		ended <- fastEnd{fr, err}
	})
	l.fast.mu.Lock()
	fc.stop = stop
	l.fast.mu.Unlock()
	var e fastEnd
	select {
	case e = <-ended:
	case <-ctx.Done():
		stop(context.Canceled)
		e = <-ended
	}
	return l.fastAnswer(start, p, note, ss.ID(), e.fr, e.err), true
}

// Cancel stops the session fast call a notifications/cancelled's params
// name, if one is in flight; the notification still goes to the go-sdk,
// which finds no such call of its own.
func (f *HTTPFast) Cancel(params json.RawMessage) { f.l.cancelFast(params) }

// levelMiddleware notes a session's logging/setLevel: from then on its
// upstreams' log messages reach it, on the stream of the call they belong
// to, which only the go-sdk path has (SessionCall).
func (l *live) levelMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "logging/setLevel" && err == nil {
			l.logLevelSet.Store(true)
		}
		return res, err
	}
}
