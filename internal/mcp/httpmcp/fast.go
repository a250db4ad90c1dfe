package httpmcp

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/mcp/session"
	"github.com/harness-dev/harness/internal/traceparent"
)

// The tools/call fast path of stateless requests: a POST the
// go-sdk's stateless handler would take as one tools/call to a listed
// upstream tool is answered by the session layer (session.HTTPFast) and
// written here as one application/json response, as the spec allows a
// server to answer a request. Whatever the go-sdk would refuse or treat
// otherwise (a batch, a notification, headers that do not match the body,
// Mcp-Param headers, an id it would not echo as written) is left to it,
// so its answers and refusals stay its own.

// FastSessions is an optional capability of Sessions: the tools/call
// fast path of a shared server's stateless requests.
type FastSessions interface {
	HTTPFastFor(s *mcp.Server) *session.HTTPFast
}

// serveFast answers r on the fast path when it can and reports whether it
// did; body is r's body, read whole.
func (h *handler) serveFast(w http.ResponseWriter, r *http.Request, s *shared, body []byte) bool {
	if s.fast == nil || r.Method != http.MethodPost || !fastHeaders(r.Header) {
		return false
	}
	msg, raw, err := jsonl.Decode(bytes.TrimSpace(body))
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method != "tools/call" {
		return false
	}
	id := jsonl.EncodeID(req.ID)
	if id == nil || !bytes.Equal(id, raw) {
		return false
	}
	result, ok := s.fast.Call(r.Context(), r.Header.Get(protocolVersionHeader), r.Header.Get("Mcp-Name"), r.Header.Get(traceparent.Header), req.Params)
	if !ok {
		return false
	}
	h.writeResult(w, r, id, result)
	return true
}

// fastHeaders reports whether the request's headers are ones the go-sdk's
// stateless handler accepts for a tools/call without more to check: a
// JSON body, an Accept of both JSON and SSE, Mcp-Method naming the
// method, and no Mcp-Param headers (which the go-sdk checks against the
// tool's schema).
func fastHeaders(hdr http.Header) bool {
	if !jsonBody(hdr) {
		return false
	}
	if hdr.Get("Mcp-Method") != "tools/call" {
		return false
	}
	for k := range hdr {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	jsonOK, streamOK := accepts(hdr.Values("Accept"))
	return jsonOK && streamOK
}

// jsonBody reports whether the request declares a JSON body.
func jsonBody(hdr http.Header) bool {
	mt, _, err := mime.ParseMediaType(hdr.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// accepts reads an Accept header as the go-sdk does: which of JSON and
// SSE it takes.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}
