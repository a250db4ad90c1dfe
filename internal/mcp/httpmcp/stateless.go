package httpmcp

import (
	"context"
	"maps"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/session"
)

// MCP 2026-07-28 (stateless Streamable HTTP, docs/design/mcp.md) on the same URL as
// the session-based revision. A request that declares that revision (or a
// later one) in its Mcp-Protocol-Version header goes to a go-sdk handler in
// Stateless mode; every other request keeps the session-based handler, so
// 2025-11-25 clients are served as before, at the same time.
//
// Stateless requests carry no session: each is attributed by its own
// bearer token (authenticate, per request), and runs on a temporary
// session of a server shared by every request of that credential
// (session.Manager.NewSharedServer), which follows reloads like any
// session's, so the grant is the one in force at each call.

// protocolStateless is the first revision served statelessly.
const protocolStateless = "2026-07-28"

// protocolVersionHeader is the Streamable HTTP protocol version header.
const protocolVersionHeader = "Mcp-Protocol-Version"

// SharedSessions is an optional capability of Sessions: servers shared by
// the stateless requests of one credential. Without it, 2026-07-28
// requests reach the session-based handler, which refuses them with the
// versions it speaks.
type SharedSessions interface {
	NewSharedServer(id session.Identity) *mcp.Server
	DropServer(s *mcp.Server)
}

// statelessKey carries the shared server of a stateless request.
const statelessKey ctxKey = 100

// shared is the server of one credential's stateless requests.
type shared struct {
	c      caller
	server *mcp.Server
	fast   *session.HTTPFast // its tools/call fast path (fast.go); nil: none
}

// wantsStateless reports whether r speaks the stateless revision.
func wantsStateless(r *http.Request) bool {
	v := r.Header.Get(protocolVersionHeader)
	return v != "" && v >= protocolStateless
}

// serveStateless serves one stateless request on its credential's server.
func (h *handler) serveStateless(w http.ResponseWriter, r *http.Request, c caller, ss SharedSessions, body []byte) {
	s := h.sharedFor(c, ss)
	if h.serveFast(w, r, s, body) {
		return
	}
	h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), statelessKey, s)))
}

// sharedFor returns c's shared server, building it at the credential's
// first stateless request. Building one also drops those of credentials
// that no longer authenticate (runs that ended), so the map holds live
// credentials only.
func (h *handler) sharedFor(c caller, ss SharedSessions) *shared {
	h.mu.Lock()
	s := h.shareds[c.hash]
	h.mu.Unlock()
	if s != nil {
		return s
	}
	h.mu.Lock()
	all := maps.Clone(h.shareds)
	h.mu.Unlock()
	for hash, old := range all {
		if !h.stillValid(&binding{caller: old.c}) {
			h.mu.Lock()
			delete(h.shareds, hash)
			h.mu.Unlock()
			ss.DropServer(old.server)
			h.log.Info("credential no longer valid; dropping its stateless server", logkey.Harness, old.c.id.Harness)
		}
	}
	built := &shared{c: c, server: ss.NewSharedServer(c.id)}
	if fs, ok := ss.(FastSessions); ok {
		built.fast = fs.HTTPFastFor(built.server)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.shareds[c.hash]; s != nil {
		// Another request of the credential built one first.
		defer ss.DropServer(built.server)
		return s
	}
	h.shareds[c.hash] = built
	return built
}

// getStatelessServer is the stateless go-sdk handler's server lookup.
func (h *handler) getStatelessServer(r *http.Request) *mcp.Server {
	if s, ok := r.Context().Value(statelessKey).(*shared); ok {
		return s.server
	}
	return nil // not reached: every stateless request carries its server
}
