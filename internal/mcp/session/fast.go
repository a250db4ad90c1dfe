package session

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/facade"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// The tools/call fast path, session side. On a session served
// over a newline-delimited stream (the socket or a handed-off stdio), a
// tools/call to a listed upstream tool is taken from the connection before
// the go-sdk server decodes it (jsonl.Transport.Intercept): the name is
// resolved, the grant checked and the call recorded as callUpstream does,
// and the broker forwards the arguments' bytes upstream and brings the
// result's bytes back (broker.StartFast), which are written to the session
// with the caller's id. Everything else, and every tools/call the fast path
// does not take (a facade or search tool, an unknown name, a progress
// token, a session not yet initialized), is the go-sdk server's as before.

// FastPathEnv turns the fast path off for the daemon's sessions when set
// to 0 (or false, off, no): the A/B switch of the bench.
const FastPathEnv = "HARNESS_MCP_FASTPATH"

// fastPathDefault is the fast path's setting from the environment.
func fastPathDefault() bool {
	switch strings.ToLower(os.Getenv(FastPathEnv)) {
	case "0", "false", "off", "no":
		return false
	}
	return true
}

// SetFastPath turns the tools/call fast path on or off for sessions
// served from now on (the default is on unless FastPathEnv says off).
func (m *Manager) SetFastPath(on bool) { m.fastOff.Store(!on) }

// FastUpstreams is the optional capability of Upstreams that forwards a
// call as bytes; *broker.Broker implements it.
type FastUpstreams interface {
	StartFast(ctx context.Context, project, name string, args json.RawMessage, permit broker.Permit, done func(broker.FastResult, error)) (stop func(cause error))
}

// fastCalls are a session's calls the fast path took and has not
// answered, by id, so a notifications/cancelled or the session's end can
// stop them.
type fastCalls struct {
	mu    sync.Mutex
	calls map[any]*fastCall
	ended bool           // the session is over: calls taken from now on stop at once
	wg    sync.WaitGroup // calls not answered
}

// fastCall is one call the fast path took.
type fastCall struct {
	stop func(cause error) // nil until StartFast returns
}

// fastParams is what the fast path reads of a tools/call's params.
type fastParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// intercept is the session's jsonl.Transport.Intercept: it takes the
// tools/call requests the fast path serves (none when fu is nil: the fast
// path is off), keeps a call's task params for the go-sdk, and sees every
// cancellation.
// It runs on the connection's reader and does not block.
func (l *live) intercept(ctx context.Context, fu FastUpstreams) func(*jsonl.Conn, *jsonrpc.Request) bool {
	return func(c *jsonl.Conn, req *jsonrpc.Request) bool {
		if !req.IsCall() {
			if req.Method == "notifications/cancelled" {
				l.cancelFast(req.Params) // and the go-sdk, which finds no such call
			}
			return false
		}
		if req.Method != methodCallTool {
			return false
		}
		if params, ok := LiftTaskParams(req.Params); ok {
			req.Params = params // a task: the go-sdk's way, with what it would drop kept (tasklift.go)
			return false
		}
		if fu == nil {
			return false // the fast path is off
		}
		// As the go-sdk gates calls: not before initialize.
		ss := l.ss.Load()
		if ss == nil || ss.InitializeParams() == nil {
			return false
		}
		var p fastParams
		if json.Unmarshal(req.Params, &p) != nil || !fastMeta(p.Meta) {
			return false
		}
		if !l.fastTool(p.Name) {
			return false
		}
		fc := &fastCall{}
		l.fast.mu.Lock()
		if l.fast.ended || l.fast.calls[req.ID.Raw()] != nil {
			l.fast.mu.Unlock()
			return false // an id still in flight, or a session ending: the go-sdk answers that
		}
		if l.fast.calls == nil {
			l.fast.calls = map[any]*fastCall{}
		}
		l.fast.calls[req.ID.Raw()] = fc
		l.fast.wg.Add(1)
		l.fast.mu.Unlock()
		l.m.fastServed.Add(1)
		l.startFast(ctx, c, ss, fu, req.ID, p, fc)
		return true
	}
}

// fastTool reports whether name is a listed upstream tool the fast path
// may call: not a facade or search tool, its namespace and tool known.
func (l *live) fastTool(name string) bool {
	if !strings.Contains(name, "__") || isSearchTool(name) || facade.Reserved(name) {
		return false
	}
	if _, ok := facade.Lookup(name); ok {
		return false
	}
	ns, tool := l.m.ups.Known(l.project(), name)
	return ns && tool // refused or unavailable: the go-sdk path says why
}

// fastMeta reports whether a call's _meta leaves it to the fast path: not
// with a progress token (the go-sdk path routes progress) nor with the
// per-request protocol keys the go-sdk server reads. Looked for as text,
// without decoding: a false match (or an escaped key) only sends the call
// the go-sdk way.
func fastMeta(meta json.RawMessage) bool {
	return !bytes.Contains(meta, []byte(`"progressToken"`)) && !bytes.Contains(meta, []byte(`"io.modelcontextprotocol/`)) &&
		bytes.IndexByte(meta, '\\') < 0
}

// cancelFast stops the fast call a notifications/cancelled names, if
// any: its answer is dropped (jsonl), and the upstream is told.
func (l *live) cancelFast(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	l.fast.mu.Lock()
	var stop func(error)
	if fc := l.fast.calls[id.Raw()]; fc != nil {
		stop = fc.stop
	}
	l.fast.mu.Unlock()
	if stop != nil {
		stop(context.Canceled)
	}
}

// endFast stops every fast call of a session that is over and waits until
// each is answered (or its answer failed to go out).
func (l *live) endFast() {
	l.fast.mu.Lock()
	l.fast.ended = true
	var stops []func(error)
	for _, fc := range l.fast.calls {
		if fc.stop != nil {
			stops = append(stops, fc.stop)
		}
	}
	l.fast.mu.Unlock()
	for _, stop := range stops {
		stop(context.Canceled)
	}
	l.fast.wg.Wait()
}

// startFast starts one call the fast path took, with the checks of
// callUpstream (permit runs on this goroutine, inside StartFast), and has
// it answered on c by finishFast when it ends.
func (l *live) startFast(ctx context.Context, c *jsonl.Conn, ss *mcp.ServerSession, fu FastUpstreams, id jsonrpc.ID, p fastParams, fc *fastCall) {
	start := time.Now()
	note := &callNote{}
	if l.m.tracer != nil {
		ctx = l.traceCall(ctx, note, metaTraceParent(p.Meta), "")
	}
	ctx = broker.WithBack(ctx, sessionBack{ss: ss, label: l.label()})
	ctx = broker.WithCaller(ctx, l.id.Harness) // its mcp_rate
	name := p.Name
	key, _, _ := strings.Cut(name, "__")
	grant := l.grant()
	permit := func(c api.Class) error { note.class = c; return l.permit(grant, name, key, c) }
	stop := fu.StartFast(ctx, l.project(), name, objectArgs(p.Arguments), permit, func(fr broker.FastResult, err error) {
		l.finishFast(c, ss, id, p, start, note, fr, err)
	})
	l.fast.mu.Lock()
	stopNow := false
	if l.fast.calls[id.Raw()] == fc {
		fc.stop = stop
		stopNow = l.fast.ended // endFast ran before the call could be stopped
	}
	l.fast.mu.Unlock()
	if stopNow {
		stop(context.Canceled)
	}
}

// finishFast records a fast call that ended and writes its answer. It
// runs on the goroutine that ended the call (the upstream's reader,
// often) and never waits.
func (l *live) finishFast(c *jsonl.Conn, ss *mcp.ServerSession, id jsonrpc.ID, p fastParams, start time.Time, note *callNote, fr broker.FastResult, err error) {
	l.fast.mu.Lock()
	delete(l.fast.calls, id.Raw())
	l.fast.mu.Unlock()
	body := l.fastAnswer(start, p, note, ss.ID(), fr, err)
	c.SendResult(id, body, func(err error) {
		if err != nil {
			l.m.log.Debug("writing a tool result", logkey.Session, l.label(), logkey.Tool, p.Name, logkey.Err, err)
		}
		l.fast.wg.Done()
	})
}

// fastAnswer records a fast call that ended and returns its result
// object: the result's bytes when the broker kept them, the result
// callUpstream would have made otherwise. sessionID is the transport's
// id of the session ("" when it has none).
func (l *live) fastAnswer(start time.Time, p fastParams, note *callNote, sessionID string, fr broker.FastResult, err error) []byte {
	name := p.Name
	body, size, out := fr.Raw, fr.ContentBytes, api.OutcomeOK
	if body == nil || err != nil {
		res := l.upstreamResult(name, fr.Result, err)
		size, out = resultBytes(res), outcome(res, nil)
		if body, err = json.Marshal(res); err != nil {
			// A result the go-sdk decoded always encodes; say so if not.
			l.m.log.Error("tool result does not marshal", logkey.Session, l.label(), logkey.Tool, name, logkey.Err, err)
			body, _ = json.Marshal(errorResult(err))
		}
	}
	if rec := l.m.rec; rec != nil {
		r := l.newRecord(start, time.Since(start), out, size)
		r.Kind, r.Tool, r.Class = api.CallTool, name, note.class
		r.Trace, r.TraceParent = note.trace, note.parent
		r.RequestBytes = len(p.Arguments)
		if rec.KeepArgs() {
			r.Args = p.Arguments
		}
		if sessionID != "" {
			r.Session = sessionID
		}
		rec.Record(r)
	}
	return body
}
