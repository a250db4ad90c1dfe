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

// The tools/call fast path, session side (issue 35). On a session served
// over a newline-delimited stream (the socket or a handed-off stdio), a
// tools/call to a listed upstream tool is taken from the connection before
// the go-sdk server decodes it (jsonl.Transport.Intercept): the name is
// resolved, the grant checked and the call recorded as callUpstream does,
// and the broker forwards the arguments' bytes upstream and brings the
// result's bytes back (broker.CallFast), which are written to the session
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
	CallFast(ctx context.Context, project, name string, args json.RawMessage, permit broker.Permit) (broker.FastResult, error)
}

// fastCalls are a session's calls the fast path took and has not answered,
// by id, so a notifications/cancelled can end them.
type fastCalls struct {
	mu      sync.Mutex
	cancels map[any]context.CancelFunc
	wg      sync.WaitGroup // calls running
}

// fastParams is what the fast path reads of a tools/call's params.
type fastParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// intercept is the session's jsonl.Transport.Intercept: it takes the
// tools/call requests the fast path serves and sees every cancellation.
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
		// As the go-sdk gates calls: not before initialize.
		ss := l.ss.Load()
		if ss == nil || ss.InitializeParams() == nil {
			return false
		}
		var p fastParams
		if json.Unmarshal(req.Params, &p) != nil || !fastMeta(p.Meta) {
			return false
		}
		name := p.Name
		if !strings.Contains(name, "__") || isSearchTool(name) || facade.Reserved(name) {
			return false
		}
		if _, ok := facade.Lookup(name); ok {
			return false
		}
		if ns, tool := l.m.ups.Known(l.project(), name); !ns || !tool {
			return false // refused or unavailable: the go-sdk path says why
		}
		callCtx, cancel := context.WithCancel(ctx)
		l.fast.mu.Lock()
		if l.fast.cancels == nil {
			l.fast.cancels = map[any]context.CancelFunc{}
		}
		if l.fast.cancels[req.ID.Raw()] != nil {
			l.fast.mu.Unlock()
			cancel()
			return false // an id still in flight: the go-sdk answers that
		}
		l.fast.cancels[req.ID.Raw()] = cancel
		l.fast.mu.Unlock()
		l.m.fastServed.Add(1)
		l.fast.wg.Add(1)
		go l.fastCall(callCtx, cancel, c, ss, fu, req.ID, p)
		return true
	}
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

// cancelFast ends the fast call a notifications/cancelled names, if any.
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
	cancel := l.fast.cancels[id.Raw()]
	l.fast.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// fastCall runs one call the fast path took and answers it on c: the
// checks and the record of callUpstream and recordMiddleware, the
// result's bytes when the broker kept them.
func (l *live) fastCall(ctx context.Context, cancel context.CancelFunc, c *jsonl.Conn, ss *mcp.ServerSession, fu FastUpstreams, id jsonrpc.ID, p fastParams) {
	defer l.fast.wg.Done()
	defer func() {
		l.fast.mu.Lock()
		delete(l.fast.cancels, id.Raw())
		l.fast.mu.Unlock()
		cancel()
	}()
	start := time.Now()
	ctx, unbind := l.m.bound(ctx)
	defer unbind()
	note := &callNote{}
	ctx = context.WithValue(ctx, callNoteKey{}, note)
	ctx = broker.WithBack(ctx, sessionBack{ss: ss, label: l.label()})

	name := p.Name
	key, _, _ := strings.Cut(name, "__")
	grant := l.grant()
	permit := func(c api.Class) error { noteClass(ctx, c); return l.permit(grant, name, key, c) }
	fr, err := fu.CallFast(ctx, l.project(), name, objectArgs(p.Arguments), permit)

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
		r.RequestBytes = len(p.Arguments)
		if rec.KeepArgs() {
			r.Args = p.Arguments
		}
		if sid := ss.ID(); sid != "" {
			r.Session = sid
		}
		rec.Record(r)
	}
	if err := c.WriteResult(id, body); err != nil {
		l.m.log.Debug("writing a tool result", logkey.Session, l.label(), logkey.Tool, name, logkey.Err, err)
	}
}
