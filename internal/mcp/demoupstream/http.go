package demoupstream

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPServer serves the demo server over Streamable HTTP (the go-sdk's
// handler) on a loopback port, for the tests of remote upstreams: it can
// require a bearer token, refuse everything with 401, and stop and start
// again on the same port, which is a server restart as a client sees it
// (the sessions it knew are gone). The tools and their counters are the
// same instance across restarts.
type HTTPServer struct {
	mcp *mcp.Server

	token  atomic.Pointer[string] // required bearer token; nil: none
	refuse atomic.Bool            // answer every request 401
	seen   atomic.Int64           // requests that presented the token

	mu   sync.Mutex
	addr string // fixed by the first Start
	srv  *http.Server
	done chan struct{} // closed when srv's Serve returned
}

// NewHTTPServer returns a stopped server for the demo server called name.
// Over HTTP it has one tool more, whoami, which answers with the request's
// Authorization header, as a careless server might, in its text and its
// structured content (the tests show harness hides it from the caller).
func NewHTTPServer(name string) *HTTPServer {
	srv := NewServer(name)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Annotations: readOnly(), Description: "Echo the request's Authorization header."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, whoamiOut, error) {
			var auth string
			if req.Extra != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			return text("you sent Authorization: " + auth), whoamiOut{Authorization: auth}, nil
		})
	return &HTTPServer{mcp: srv}
}

type whoamiOut struct {
	Authorization string `json:"authorization"`
}

// RequireBearer makes every request need "Authorization: Bearer token";
// "" lifts the requirement. A request without it gets 401.
func (s *HTTPServer) RequireBearer(token string) {
	if token == "" {
		s.token.Store(nil)
		return
	}
	s.token.Store(&token)
}

// Refuse makes every request get 401, whatever it presents (a revoked
// credential), until Refuse(false).
func (s *HTTPServer) Refuse(on bool) { s.refuse.Store(on) }

// Authorized counts the requests that presented the required token.
func (s *HTTPServer) Authorized() int64 { return s.seen.Load() }

// Start listens on addr the first time ("127.0.0.1:0" picks a port) and on
// the same address afterwards, with a fresh session table.
func (s *HTTPServer) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("demoupstream: http server already started")
	}
	if s.addr != "" {
		addr = s.addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("demoupstream: listen: %w", err)
	}
	s.addr = ln.Addr().String()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
	s.srv = &http.Server{Handler: s.guard(h)}
	s.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln) // ErrServerClosed after Stop
	}(s.srv, s.done)
	return nil
}

// URL is the server's MCP endpoint (after the first Start).
func (s *HTTPServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr + "/mcp"
}

// Stop closes the listener and every connection, and ends every session,
// as a server that goes away does. Stopping a stopped server is a no-op.
func (s *HTTPServer) Stop() {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-done
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

// guard applies the token requirement and the refusal before the MCP
// handler sees a request.
func (s *HTTPServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refuse.Load() {
			http.Error(w, "credential revoked", http.StatusUnauthorized)
			return
		}
		if tok := s.token.Load(); tok != nil {
			want := "Bearer " + *tok
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="demo"`)
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
				return
			}
			s.seen.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}
