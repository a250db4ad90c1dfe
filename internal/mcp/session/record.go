package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// CallRecorder receives one record per tools/call and prompts/get of every
// session (the call log, docs/design/mcp.md); *calllog.Log implements it.
type CallRecorder interface {
	// Record takes one finished call. It is on the call path: it must not
	// block or do I/O.
	Record(api.CallRecord)
	// KeepArgs says whether argument values are stored, so they are only
	// handed over when they will be.
	KeepArgs() bool
}

// RunResolver is an optional capability of an Authority: the run a live
// token was minted for, so records of attributed sessions name the run.
type RunResolver interface {
	RunOf(token string) (run uint64, ok bool)
}

// SetCallRecorder makes every session report its calls to r. Call it
// before the first session is served.
func (m *Manager) SetCallRecorder(r CallRecorder) { m.rec = r }

const methodGetPrompt = "prompts/get"

// recordMiddleware times every tools/call and prompts/get, refusals
// included, and hands the record over once the answer is ready.
func (l *live) recordMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		rec := l.m.rec
		if rec == nil || (method != methodCallTool && method != methodGetPrompt) {
			return next(ctx, method, req)
		}
		start := time.Now()
		note := &callNote{}
		if q, ok := req.(*mcp.CallToolRequest); ok && l.m.tracer != nil {
			ctx = l.traceCall(ctx, note, callMetaTraceParent(q), requestHeader(q))
		}
		res, err := next(context.WithValue(ctx, callNoteKey{}, note), method, req)
		l.record(rec, start, time.Since(start), req, res, err, note)
		return res, err
	}
}

// callNote carries what the call's handler decided back to the recorder.
// The handler runs on the middleware's goroutine.
type callNote struct {
	class api.Class // the class permission was checked against
	tool  string    // the tool harness_call_tool called, "" otherwise
	// trace and parent are the call's traceparent and the one it
	// continued, while tracing is on (trace.go).
	trace, parent string
}

type callNoteKey struct{}

// noteClass records the class a call's permission was checked against
// (an upstream tool's class is known only once the broker resolves it).
func noteClass(ctx context.Context, c api.Class) {
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok {
		n.class = c
	}
}

// callerInfo is what every record of one session shares, worked out at
// its first call (a token's run and a harness's project do not change).
type callerInfo struct {
	once      sync.Once
	caller    string
	transport string
	session   string // for sessions whose transport has no id (the socket)
	project   string
	run       uint64
}

func (l *live) callerInfo() *callerInfo {
	ci := &l.rec
	ci.once.Do(func() {
		ci.transport = api.TransportHTTP
		switch {
		case l.owned:
			ci.transport = api.TransportSocket
			ci.session = newSessionID()
		case l.shared:
			// Stateless HTTP sessions have no id: name the caller's server.
			ci.session = "http-" + strings.TrimPrefix(newSessionID(), "sock-")
		}
		switch {
		case l.id.Harness != "":
			ci.caller = api.CallerHarness
			ci.project = l.project()
			if rr, ok := l.m.auth.(RunResolver); ok && l.id.Token != "" {
				ci.run, _ = rr.RunOf(l.id.Token)
			}
		case l.id.Operator:
			ci.caller = api.CallerOperator
		default:
			ci.caller = api.CallerUnattributed
		}
	})
	return ci
}

func (l *live) record(rec CallRecorder, start time.Time, d time.Duration, req mcp.Request, res mcp.Result, err error, note *callNote) {
	r := l.newRecord(start, d, outcome(res, err), resultBytes(res))
	r.Trace, r.TraceParent = note.trace, note.parent
	var ss *mcp.ServerSession
	switch q := req.(type) {
	case *mcp.CallToolRequest:
		ss = q.Session
		if p := q.Params; p != nil {
			r.Kind, r.Tool = api.CallTool, p.Name
			if note.tool != "" {
				// Recorded as the tool it reached, as a direct call is.
				r.Tool = note.tool
			}
			r.Class = toolClass(r.Tool, note)
			r.RequestBytes = len(p.Arguments)
			if rec.KeepArgs() {
				r.Args = p.Arguments
			}
		}
	case *mcp.GetPromptRequest:
		ss = q.Session
		if p := q.Params; p != nil {
			r.Kind, r.Tool = api.CallPrompt, p.Name
			for k, v := range p.Arguments {
				r.RequestBytes += len(k) + len(v)
			}
			if rec.KeepArgs() && len(p.Arguments) > 0 {
				r.Args, _ = json.Marshal(p.Arguments) // a string map always encodes
			}
		}
	}
	if ss != nil {
		if id := ss.ID(); id != "" {
			r.Session = id
		}
	}
	rec.Record(r)
}

// newRecord is a call record with what every record of the session shares
// and what every call has.
func (l *live) newRecord(start time.Time, d time.Duration, outcome string, responseBytes int) api.CallRecord {
	ci := l.callerInfo()
	return api.CallRecord{
		Time: start, Session: ci.session, Transport: ci.transport,
		Caller: ci.caller, Harness: l.id.Harness, RunID: ci.run, Project: ci.project,
		Outcome:       outcome,
		DurationMS:    float64(d) / float64(time.Millisecond),
		ResponseBytes: responseBytes,
	}
}

// toolClass is the class the session checked a tool against: the
// facade's own, or the upstream tool's as the broker resolved it ("" when
// the call was refused before that, e.g. an unknown namespace).
func toolClass(name string, note *callNote) api.Class {
	if t, ok := facade.Lookup(name); ok {
		return t.Class
	}
	return note.class
}

// outcome is "ok", the error code of a refusal or failure, or tool_error
// for an upstream tool's own isError result.
func outcome(res mcp.Result, err error) string {
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams {
			return string(errcode.InvalidArgument)
		}
		return string(errcode.Of(err))
	}
	if tr, ok := res.(*mcp.CallToolResult); ok && tr != nil && tr.IsError {
		if b, ok := tr.StructuredContent.(errcode.Body); ok && b.Code != "" {
			return string(b.Code)
		}
		if c, ok := codeInText(tr); ok {
			return string(c)
		}
		return api.OutcomeToolError
	}
	return api.OutcomeOK
}

// codeInText reads the code of an error result the session made when its
// structured body was dropped (a tool with an output schema): the text is
// then the {code, message} body. An upstream's own error text never is
// one: the broker prefixes it with "upstream KEY: ".
func codeInText(tr *mcp.CallToolResult) (errcode.Code, bool) {
	if len(tr.Content) != 1 {
		return "", false
	}
	tc, ok := tr.Content[0].(*mcp.TextContent)
	if !ok || !strings.HasPrefix(tc.Text, `{"code":`) {
		return "", false
	}
	var b errcode.Body
	if json.Unmarshal([]byte(tc.Text), &b) != nil || b.Message == "" || errcode.SentinelFor(b.Code).Code() != b.Code {
		return "", false
	}
	return b.Code, true
}

// resultBytes is the size of a result's content: text as is, binary data
// as the base64 that goes on the wire.
func resultBytes(res mcp.Result) int {
	n := 0
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r == nil {
			return 0
		}
		for _, c := range r.Content {
			n += contentBytes(c)
		}
	case *mcp.GetPromptResult:
		if r == nil {
			return 0
		}
		for _, m := range r.Messages {
			if m != nil {
				n += contentBytes(m.Content)
			}
		}
	}
	return n
}

func contentBytes(c mcp.Content) int {
	b64 := base64.StdEncoding.EncodedLen
	switch x := c.(type) {
	case *mcp.TextContent:
		return len(x.Text)
	case *mcp.ImageContent:
		return b64(len(x.Data))
	case *mcp.AudioContent:
		return b64(len(x.Data))
	case *mcp.EmbeddedResource:
		if x.Resource != nil {
			return len(x.Resource.Text) + b64(len(x.Resource.Blob))
		}
	case *mcp.ResourceLink:
		return len(x.URI)
	}
	return 0
}

// newSessionID names a socket session in the call log.
func newSessionID() string {
	var b [9]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms (it panics)
	return "sock-" + base64.RawURLEncoding.EncodeToString(b[:])
}
