package session

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/traceparent"
)

// CallTracer is telemetry as the session sees it (docs/design/telemetry.md):
// the span a harness's calls belong to when their caller sent no
// traceparent. *telemetry.Telemetry implements it.
type CallTracer interface {
	CallParent(harness string) (traceparent.TP, bool)
	// LinkNextTurn links the next turn of harness to from, the span of
	// the call that delegated to it.
	LinkNextTurn(harness string, from traceparent.TP)
}

// linkDelegation links the turn a delegation is about to start to the
// delegating call's span (in ctx), so the caller's trace leads to it.
func (l *live) linkDelegation(ctx context.Context, args json.RawMessage) {
	tp, ok := traceparent.From(ctx)
	if l.m.tracer == nil || !ok {
		return
	}
	var a struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(args, &a) == nil && a.Name != "" {
		l.m.tracer.LinkNextTurn(a.Name, tp)
	}
}

// SetCallTracer turns tracing of calls on. Call it before the first
// session is served; without it a call costs no tracing at all.
func (m *Manager) SetCallTracer(t CallTracer) { m.tracer = t }

// traceCall gives a tools/call its own traceparent, a child of the one its
// caller sent (in _meta, else the HTTP header) or of the calling harness's
// turn, and puts it in ctx for the broker to send upstream. The call's
// record carries both, and telemetry makes the span from it.
func (l *live) traceCall(ctx context.Context, note *callNote, meta, header string) context.Context {
	tr := l.m.tracer
	if tr == nil {
		return ctx
	}
	parent, ok := traceparent.Parse(meta)
	if !ok {
		parent, ok = traceparent.Parse(header)
	}
	if !ok {
		parent, ok = tr.CallParent(l.id.Harness)
	}
	own := traceparent.Child(parent)
	note.trace = own.String()
	if ok {
		note.parent = parent.String()
	}
	return traceparent.With(ctx, own)
}

// callMetaTraceParent is the traceparent in a go-sdk request's _meta.
func callMetaTraceParent(q *mcp.CallToolRequest) string {
	if q.Params == nil {
		return ""
	}
	s, _ := q.Params.Meta[traceparent.Header].(string)
	return s
}

// requestHeader is the traceparent header of the HTTP request a go-sdk
// request came in, if any.
func requestHeader(q *mcp.CallToolRequest) string {
	if q.Extra == nil || q.Extra.Header == nil {
		return ""
	}
	return q.Extra.Header.Get(traceparent.Header)
}

// metaTraceParent reads the traceparent of a raw _meta (the fast path's).
func metaTraceParent(meta json.RawMessage) string {
	if len(meta) == 0 {
		return ""
	}
	var m struct {
		TP string `json:"traceparent"`
	}
	_ = json.Unmarshal(meta, &m) // a _meta that is no object carries none
	return m.TP
}
