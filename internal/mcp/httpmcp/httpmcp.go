// Package httpmcp serves the daemon's MCP sessions over Streamable HTTP on a
// loopback address (DESIGN §10, issue 8). The sessions are the ones the
// socket bridge gets, built by session.Manager: one go-sdk server per
// session, built once at initialize and kept by the go-sdk for the session's
// lifetime.
//
// Every request must carry `Authorization: Bearer <token>`. A harness's
// per-spawn token attributes the session to that harness exactly as over the
// socket; the operator token (LoadOrCreateOperatorToken) opens an
// unattributed session granted read, plus write while the operator allow
// list contains "write". Each MCP session is bound to the token that created
// it: the same session id with another token is refused, a revoked token
// gets 401 and its sessions are ended. Requests whose Host or Origin is not
// the loopback address served are refused with 403 (DNS rebinding).
package httpmcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/session"
)

// Path is the only path the handler serves.
const Path = "/mcp"

// sessionIDHeader is the Streamable HTTP session header.
const sessionIDHeader = "Mcp-Session-Id"

// Sessions is what the handler needs of the session manager;
// *session.Manager implements it.
type Sessions interface {
	// Authenticate maps a per-spawn token to an attributed Identity; it fails
	// for an unknown or revoked token.
	Authenticate(token string, allowControl bool) (session.Identity, error)
	// NewServer builds the server of one session.
	NewServer(id session.Identity) *mcp.Server
}

// Options configure NewHandler.
type Options struct {
	// Sessions authenticates harness tokens and builds session servers.
	Sessions Sessions
	// OperatorToken is the operator token; empty disables operator access.
	OperatorToken string
	// OperatorAllow returns the current [daemon] mcp_http_operator_allow
	// (e.g. ["read"] or ["read","write"]); it is read for every request, so a
	// reload takes effect without restarting the listener. Nil means read only.
	OperatorAllow func() []string
	// Addr is the host:port actually served (the listener's address, with
	// port 0 already resolved); Host and Origin headers are checked against it.
	Addr string
	// IdleTimeout closes sessions that get no request for this long; zero
	// keeps them until the client deletes them or their token is revoked.
	IdleTimeout time.Duration
	// Logger receives the handler's logs; nil discards them.
	Logger *slog.Logger
	// Metrics, when set, is served at MetricsPath to the operator token
	// only (metrics.go).
	Metrics http.Handler
}

// NewHandler returns the HTTP handler of the MCP endpoint. It serves Path
// only and answers 404 elsewhere.
func NewHandler(opt Options) http.Handler {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "mcp-http")
	h := &handler{
		opt:     opt,
		log:     log,
		hosts:   map[string]bool{},
		origins: map[string]bool{},
		bound:   map[string]*binding{},
	}
	if opt.OperatorToken != "" {
		sum := sha256.Sum256([]byte(opt.OperatorToken))
		h.operator = &sum
	}
	if _, port, err := net.SplitHostPort(opt.Addr); err != nil || port == "0" {
		// Nothing will match: every request is refused with 403.
		log.Error("unusable served address; refusing every request", "addr", opt.Addr, "error", err)
	} else {
		host, _, _ := net.SplitHostPort(opt.Addr)
		for _, hh := range []string{"127.0.0.1", "localhost", "::1", host} {
			hp := strings.ToLower(net.JoinHostPort(hh, port))
			h.hosts[hp] = true
			h.origins["http://"+hp] = true
		}
	}
	h.sdk = mcp.NewStreamableHTTPHandler(h.getServer, &mcp.StreamableHTTPOptions{
		Logger:         log,
		SessionTimeout: opt.IdleTimeout,
	})
	return h
}

type handler struct {
	opt      Options
	log      *slog.Logger
	operator *[32]byte // hash of the operator token; nil when there is none
	hosts    map[string]bool
	origins  map[string]bool
	sdk      *mcp.StreamableHTTPHandler

	probeOnce sync.Once
	probe     *mcp.Server

	mu    sync.Mutex
	bound map[string]*binding // MCP session id -> the credential that created it
}

// caller is the credential of one request.
type caller struct {
	token    string
	hash     [32]byte
	id       session.Identity
	operator bool
}

// binding ties an MCP session to the credential that created it.
type binding struct {
	caller
	server *mcp.Server
}

type ctxKey int

const (
	newSessionKey ctxKey = iota // *newSession: an initialize without a session id
	boundKey                    // *binding: a request for an existing session
)

// newSession carries the caller of an initialize request to getServer, which
// the go-sdk may call more than once per request; the server is built once.
type newSession struct {
	c      caller
	once   sync.Once
	server *mcp.Server
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path && r.URL.Path != MetricsPath {
		http.NotFound(w, r)
		return
	}
	if !h.hosts[strings.ToLower(r.Host)] {
		h.log.Warn("refused request with a foreign Host", "host", r.Host, "remote", r.RemoteAddr)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !h.origins[strings.ToLower(origin)] {
		h.log.Warn("refused request with a foreign Origin", "origin", origin, "remote", r.RemoteAddr)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if r.URL.Path == MetricsPath {
		h.serveMetrics(w, r)
		return
	}
	sid := r.Header.Get(sessionIDHeader)
	c, err := h.authenticate(r)
	if err != nil {
		h.log.Info("refused unauthenticated request", "remote", r.RemoteAddr, "error", err)
		if sid != "" {
			h.endIfRevoked(sid)
		}
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}

	if sid != "" {
		b, status := h.lookup(sid, c)
		if status != 0 {
			http.Error(w, strings.ToLower(http.StatusText(status)), status)
			return
		}
		h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), boundKey, b)))
		if r.Method == http.MethodDelete && findSession(b.server, sid) == nil {
			h.forget(sid) // the client ended its session
		}
		return
	}

	if r.Method == http.MethodPost {
		isInit, err := peekInitialize(w, r)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if isInit {
			h.sweep()
			ns := &newSession{c: c}
			r = r.WithContext(context.WithValue(r.Context(), newSessionKey, ns))
			w = &captureWriter{ResponseWriter: w, capture: func(hdr http.Header, status int) {
				h.bindNew(hdr, status, ns)
			}}
		}
	}
	h.sdk.ServeHTTP(w, r)
}

// errUnauthorized is every authentication failure; the reason stays in the
// logs, never in the response.
var errUnauthorized = errors.New("httpmcp: unauthorized")

// authenticate resolves the request's bearer token.
func (h *handler) authenticate(r *http.Request) (caller, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return caller{}, fmt.Errorf("%w: no bearer token", errUnauthorized)
	}
	c := caller{token: token, hash: sha256.Sum256([]byte(token))}
	if h.operator != nil && subtle.ConstantTimeCompare(c.hash[:], h.operator[:]) == 1 {
		c.operator = true
		c.id = session.Identity{AllowControl: h.operatorWrite(), Operator: true}
		return c, nil
	}
	id, err := h.opt.Sessions.Authenticate(token, false)
	if err != nil {
		return caller{}, fmt.Errorf("%w: %w", errUnauthorized, err)
	}
	if id.Harness == "" {
		// Defensive: only the operator token may open unattributed sessions.
		return caller{}, fmt.Errorf("%w: token resolved to no harness", errUnauthorized)
	}
	c.id = id
	return c, nil
}

func (h *handler) operatorWrite() bool {
	return h.opt.OperatorAllow != nil && slices.Contains(h.opt.OperatorAllow(), string(api.Write))
}

// lookup checks that sid was created with the caller's credential and, for
// the operator, under the grant still in force. It returns the binding, or
// the status to refuse the request with.
func (h *handler) lookup(sid string, c caller) (*binding, int) {
	h.mu.Lock()
	b := h.bound[sid]
	h.mu.Unlock()
	if b == nil {
		return nil, http.StatusNotFound
	}
	if subtle.ConstantTimeCompare(b.hash[:], c.hash[:]) != 1 {
		h.log.Warn("refused a session id presented with another token", "harness", b.id.Harness, "operator", b.operator)
		return nil, http.StatusForbidden
	}
	if b.operator && b.id.AllowControl != c.id.AllowControl {
		// The operator grant is fixed per session like the bridge's
		// --allow-control; when the config changes it, the session ends and
		// the client's next initialize gets the current grant.
		h.log.Info("operator grant changed; ending its HTTP session", "write", c.id.AllowControl)
		h.end(sid, b)
		return nil, http.StatusNotFound
	}
	return b, 0
}

// endIfRevoked ends session sid when the token that created it no longer
// authenticates. The presented token plays no part: a stranger's bad token
// cannot end someone else's session.
func (h *handler) endIfRevoked(sid string) {
	h.mu.Lock()
	b := h.bound[sid]
	h.mu.Unlock()
	if b != nil && !b.operator && !h.stillValid(b) {
		h.log.Info("token revoked; ending its HTTP session", "harness", b.id.Harness)
		h.end(sid, b)
	}
}

func (h *handler) stillValid(b *binding) bool {
	if b.operator {
		return b.id.AllowControl == h.operatorWrite()
	}
	_, err := h.opt.Sessions.Authenticate(b.token, false)
	return err == nil
}

// sweep forgets bindings whose session has ended and ends sessions whose
// token was revoked or whose operator grant changed. It runs before every new
// session, so sessions of runs that ended are reclaimed as new ones arrive.
func (h *handler) sweep() {
	h.mu.Lock()
	all := maps.Clone(h.bound)
	h.mu.Unlock()
	for sid, b := range all {
		switch {
		case findSession(b.server, sid) == nil:
			h.forget(sid)
		case !h.stillValid(b):
			h.log.Info("credential no longer valid; ending its HTTP session", "harness", b.id.Harness, "operator", b.operator)
			h.end(sid, b)
		}
	}
}

// end closes session sid and forgets its binding.
func (h *handler) end(sid string, b *binding) {
	h.forget(sid)
	if ss := findSession(b.server, sid); ss != nil {
		if err := ss.Close(); err != nil {
			h.log.Debug("closing HTTP session", "harness", b.id.Harness, "error", err)
		}
	}
}

func (h *handler) forget(sid string) {
	h.mu.Lock()
	delete(h.bound, sid)
	h.mu.Unlock()
}

func findSession(s *mcp.Server, sid string) *mcp.ServerSession {
	for ss := range s.Sessions() {
		if ss.ID() == sid {
			return ss
		}
	}
	return nil
}

// bindNew records the session id the go-sdk assigned to an initialize
// request, before the response (and so the id) reaches the client.
func (h *handler) bindNew(hdr http.Header, status int, ns *newSession) {
	sid := hdr.Get(sessionIDHeader)
	if sid == "" || status >= 300 || ns.server == nil {
		return
	}
	h.mu.Lock()
	h.bound[sid] = &binding{caller: ns.c, server: ns.server}
	h.mu.Unlock()
	h.log.Info("HTTP session started", "harness", ns.c.id.Harness, "operator", ns.c.operator, "write_flag", ns.c.id.AllowControl)
}

// getServer is the go-sdk's server lookup. It is called for every request
// (to validate the protocol version header) and again for a new session.
func (h *handler) getServer(r *http.Request) *mcp.Server {
	if ns, ok := r.Context().Value(newSessionKey).(*newSession); ok {
		ns.once.Do(func() { ns.server = h.opt.Sessions.NewServer(ns.c.id) })
		return ns.server
	}
	if b, ok := r.Context().Value(boundKey).(*binding); ok {
		return b.server
	}
	// Requests that open no session (a server/discover probe, a stray GET)
	// are answered by one read-only server that never initializes, so they
	// see the same protocol versions without a server built per request.
	h.probeOnce.Do(func() { h.probe = h.opt.Sessions.NewServer(session.Identity{}) })
	return h.probe
}

// peekInitialize reports whether the POST body holds an initialize request,
// leaving the body for the go-sdk to read again.
func peekInitialize(w http.ResponseWriter, r *http.Request) (bool, error) {
	if r.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	if err != nil {
		return false, fmt.Errorf("httpmcp: read body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	body = bytes.TrimSpace(body)
	msgs := []json.RawMessage{body}
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return false, nil
		}
	}
	for _, m := range msgs {
		var req struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(m, &req) == nil && req.Method == "initialize" {
			return true, nil
		}
	}
	return false, nil
}

// captureWriter calls capture once, just before the response status is sent.
type captureWriter struct {
	http.ResponseWriter
	capture func(http.Header, int)
	done    bool
}

func (c *captureWriter) fire(status int) {
	if !c.done {
		c.done = true
		c.capture(c.Header(), status)
	}
}

func (c *captureWriter) WriteHeader(status int) {
	c.fire(status)
	c.ResponseWriter.WriteHeader(status)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	c.fire(http.StatusOK)
	n, err := c.ResponseWriter.Write(p)
	if err != nil {
		return n, fmt.Errorf("httpmcp: write response: %w", err)
	}
	return n, nil
}

// Flush sends the status too, so it is captured first.
func (c *captureWriter) Flush() {
	c.fire(http.StatusOK)
	// A writer that cannot flush makes the next write report the failure.
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
