package session

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// The tools/call fast path for stateless Streamable HTTP requests (MCP
// 2026-07-28). The go-sdk serves such a request on a temporary
// session of the credential's shared server, built and torn down per
// request, and answers it on an SSE stream: most of the daemon's cost of
// an HTTP call. A tools/call to a listed upstream tool that needs nothing
// of a session is answered here instead, from its bytes, with the checks
// and the call-log row of the socket's fast path; httpmcp writes the
// answer as one application/json response.
//
// A call needs a session when the upstream might ask its client something
// during it: so only a client that declared neither elicitation nor
// sampling and asked for no log messages (the request's _meta) is served
// here. Everything else is the go-sdk's as before.

// HTTPFast is the fast path of the stateless requests one shared server
// (NewSharedServer) serves, or of the calls of one HTTP session's server
// (NewServer; SessionCall, fastsession.go).
type HTTPFast struct {
	l  *live
	fu FastUpstreams
}

// HTTPFastFor returns the fast path of s, a server NewSharedServer or
// NewServer built, or nil when there is none (the fast path is off, or s
// is not this Manager's).
func (m *Manager) HTTPFastFor(s *mcp.Server) *HTTPFast {
	fu, ok := m.ups.(FastUpstreams)
	if !ok || m.fastOff.Load() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.live {
		if l.server == s && !l.owned {
			return &HTTPFast{l: l, fu: fu}
		}
	}
	return nil
}

// statelessParams is what the fast path reads of a stateless tools/call's
// params, _meta with SEP-2575's per-request keys included, in one pass.
type statelessParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      *struct {
		ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
		ClientInfo      json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		// Decoded as the go-sdk decodes them, so what it would refuse is
		// refused here too, and left to it.
		Capabilities  *statelessCaps  `json:"io.modelcontextprotocol/clientCapabilities"`
		LogLevel      json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
		ProgressToken json.RawMessage `json:"progressToken"`
		TraceParent   string          `json:"traceparent"`
	} `json:"_meta"`
}

// statelessCaps is the client's capabilities as a 2026-07-28 request
// carries them (the go-sdk's clientCapabilitiesV2).
type statelessCaps struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// fastStateless reads a stateless call's params and reports whether they
// leave it to the fast path, under the protocol version header version:
// the go-sdk would take it as a call of that version (the keys it
// validates are there and well formed), and the client asks for nothing
// the fast path cannot give it (progress, log messages, elicitation,
// sampling). A false answer only sends the call the go-sdk way.
func fastStateless(params json.RawMessage, version string) (statelessParams, bool) {
	var p statelessParams
	// encoding/json matches keys ignoring case, the go-sdk does not: the
	// keys it needs must be there as it reads them.
	if !bytes.Contains(params, []byte(`"io.modelcontextprotocol/protocolVersion"`)) ||
		!bytes.Contains(params, []byte(`"io.modelcontextprotocol/clientCapabilities"`)) || json.Unmarshal(params, &p) != nil {
		return p, false
	}
	m := p.Meta
	if m == nil || m.ProtocolVersion != version || m.ProgressToken != nil || m.LogLevel != nil ||
		m.Capabilities == nil || m.Capabilities.Elicitation != nil || m.Capabilities.Sampling != nil {
		return p, false
	}
	if m.ClientInfo != nil {
		var info *mcp.Implementation
		if json.Unmarshal(m.ClientInfo, &info) != nil || info == nil {
			return p, false
		}
	}
	return p, true
}

// Call answers one stateless tools/call on the fast path: the result
// object's bytes, ready to send under the request's id, or ok false when
// the call is not the fast path's (then nothing was done and the go-sdk
// serves it). version and name are the request's protocol version and
// Mcp-Name headers, which must be the body's; traceHeader its traceparent
// header. The call ends when ctx does
// (the client went away), as a go-sdk handler's does.
func (f *HTTPFast) Call(ctx context.Context, version, name, traceHeader string, params json.RawMessage) (result []byte, ok bool) {
	l := f.l
	if !l.shared {
		return nil, false
	}
	sp, ok := fastStateless(params, version)
	if !ok || sp.Name != name || !l.fastTool(name) || l.isHeaded(name) {
		return nil, false
	}
	p := fastParams{Name: sp.Name, Arguments: sp.Arguments}
	start := time.Now()
	note := &callNote{}
	if l.m.tracer != nil {
		ctx = l.traceCall(ctx, note, sp.Meta.TraceParent, traceHeader)
	}
	key, _, _ := strings.Cut(name, "__")
	grant := l.grant()
	permit := func(c api.Class) error { note.class = c; return l.permit(grant, name, key, c) }
	// A back of its own per request, as the go-sdk's temporary session of
	// each request is a session of its own.
	ctx = broker.WithBack(ctx, &statelessBack{label: l.label()})
	ctx = broker.WithCaller(ctx, l.id.Harness) // its mcp_rate
	ended := make(chan fastEnd, 1)
	stop := f.fu.StartFast(ctx, l.project(), name, objectArgs(p.Arguments), permit, func(fr broker.FastResult, err error) {
		ended <- fastEnd{fr, err}
	})
	var e fastEnd
	select {
	case e = <-ended:
	case <-ctx.Done():
		stop(context.Canceled)
		e = <-ended
	}
	return f.stateless(l.fastAnswer(start, p, note, "", e.fr, e.err)), true
}

// stateless is a result object as the go-sdk answers a 2026-07-28 call
// (SEP-2575): the server named in its _meta unless the result names one.
// A result without a _meta member anywhere (the common case) is written
// around; one with a _meta somewhere is decoded to find out whether it is
// the result's own.
func (f *HTTPFast) stateless(body []byte) []byte {
	info, err := json.Marshal(mcp.Implementation{Name: "harness", Version: f.l.m.version})
	if err != nil {
		return body // a struct of two strings always encodes
	}
	body = bytes.TrimSpace(body)
	if !bytes.Contains(body, []byte(`"_meta"`)) && len(body) >= 2 && body[0] == '{' {
		out := make([]byte, 0, len(body)+len(info)+96)
		out = append(out, `{"_meta":{"io.modelcontextprotocol/serverInfo":`...)
		out = append(out, info...)
		out = append(out, '}')
		if rest := bytes.TrimSpace(body[1 : len(body)-1]); len(rest) > 0 {
			out = append(out, ',')
			out = append(out, rest...)
		}
		return append(out, '}')
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	var meta map[string]json.RawMessage
	if raw, ok := m["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return body // a _meta that is not an object: as the upstream sent it
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
		meta[mcp.MetaKeyServerInfo] = info
	}
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// fastEnd is how a fast call ended.
type fastEnd struct {
	fr  broker.FastResult
	err error
}

// statelessBack is the client of one stateless request as an upstream's
// requests during its call reach it: one that declared neither
// elicitation nor sampling (fastStateless) and asked for no log messages,
// so it answers as a session of such a client does.
type statelessBack struct{ label string }

func (s *statelessBack) Label() string { return s.label }

func (s *statelessBack) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return nil, noElicitation(s.label)
}

func (s *statelessBack) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, noSampling(s.label)
}

// Log drops the message: the client set no level, which a session
// without one does too.
func (s *statelessBack) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }
