package httpmcp

import (
	"bytes"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/traceparent"
)

// The tools/call fast path of session-based requests (2025-11-25 and
// earlier): a POST to a bound session that the go-sdk would take as one
// tools/call is answered by the session layer (session.HTTPFast.SessionCall)
// and written as one application/json response. Whatever the go-sdk would
// refuse or treat otherwise (a batch, a notification, headers it checks, a
// protocol version header that is not the session's) is left to it.
//
// The go-sdk's idle timer of a session is reset only by the requests it
// serves, so with calls answered beside it a busy session would expire:
// the handler keeps that timer itself (expireIdle), reset by every POST
// to the session, as the go-sdk's is by its POSTs.

// serveSessionFast answers r, a request of bound session sid, on the fast
// path when it can and reports whether it did; body is r's body, read
// whole. A notifications/cancelled stops the fast call it names and still
// goes to the go-sdk.
func (h *handler) serveSessionFast(w http.ResponseWriter, r *http.Request, b *binding, sid string, body []byte) bool {
	if b.fast == nil || r.Method != http.MethodPost || !sessionFastHeaders(r.Header) {
		return false
	}
	msg, raw, err := jsonl.Decode(bytes.TrimSpace(body))
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			b.fast.Cancel(req.Params)
		}
		return false
	}
	if req.Method != "tools/call" {
		return false
	}
	id := jsonl.EncodeID(req.ID)
	if id == nil || !bytes.Equal(id, raw) {
		return false
	}
	ss := findSession(b.server, sid)
	if ss == nil {
		return false
	}
	// The header the go-sdk validates must be the session's own version,
	// and one it serves with sessions.
	version := r.Header.Get(protocolVersionHeader)
	if ip := ss.InitializeParams(); ip == nil || version == "" || version >= protocolStateless || ip.ProtocolVersion != version {
		return false
	}
	result, ok := b.fast.SessionCall(r.Context(), ss, req.ID, r.Header.Get(traceparent.Header), req.Params)
	if !ok {
		return false
	}
	h.writeResult(w, r, id, result)
	return true
}

// writeResult writes one JSON-RPC result under id as an application/json
// response.
func (h *handler) writeResult(w http.ResponseWriter, r *http.Request, id, result []byte) {
	answer := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(result))
	answer = append(answer, `{"jsonrpc":"2.0","id":`...)
	answer = append(answer, id...)
	answer = append(answer, `,"result":`...)
	answer = append(answer, result...)
	answer = append(answer, '}')
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Content-Type", "application/json")
	if _, err := w.Write(answer); err != nil {
		h.log.Debug("writing a tool result", logkey.Remote, r.RemoteAddr, logkey.Err, err)
	}
}

// sessionFastHeaders reports whether a session POST's headers are ones the
// go-sdk accepts for a message without more to check: a JSON body, an
// Accept of both JSON and SSE, and no Last-Event-ID.
func sessionFastHeaders(hdr http.Header) bool {
	if len(hdr.Values("Last-Event-ID")) > 0 || !jsonBody(hdr) {
		return false
	}
	jsonOK, streamOK := accepts(hdr.Values("Accept"))
	return jsonOK && streamOK
}

// armIdle starts session sid's idle timer, when sessions have one.
// Caller holds h.mu.
func (h *handler) armIdleLocked(sid string, b *binding) {
	if h.opt.IdleTimeout <= 0 {
		return
	}
	b.idle = time.AfterFunc(h.opt.IdleTimeout, func() { h.expireIdle(sid, b) })
}

// expireIdle ends session sid when no POST to it is in flight and none
// ended within IdleTimeout; otherwise it looks again when one could have.
func (h *handler) expireIdle(sid string, b *binding) {
	h.mu.Lock()
	if h.bound[sid] != b {
		h.mu.Unlock()
		return // forgotten: ended, evicted or deleted
	}
	left := h.opt.IdleTimeout - time.Since(b.posted)
	if b.posts > 0 {
		left = h.opt.IdleTimeout
	}
	if left > 0 {
		b.idle.Reset(left)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	h.log.Info("HTTP session idle; ending it", logkey.Harness, b.id.Harness, logkey.Operator, b.operator)
	h.end(sid, b)
}
