// Package httpmcp serves the daemon's MCP sessions over Streamable HTTP on a
// loopback address (docs/design/mcp.md). The sessions are the ones the
// socket bridge gets, built by session.Manager: one go-sdk server per
// session, built once at initialize and kept by the go-sdk for the session's
// lifetime.
//
// Every request must carry `Authorization: Bearer <token>`. A harness's
// per-spawn token attributes the session to that harness exactly as over the
// socket; the operator token (LoadOrCreateOperatorToken) opens an
// unattributed operator session, whose grant the session layer looks up per
// call ([daemon] mcp_http_operator_allow, live across reloads like a
// harness's mcp_allow). Each MCP session is bound to the token that created
// it: the same session id with another token is refused, a revoked token
// gets 401 and its sessions are ended. Requests whose Host or Origin does not
// name a loopback host are refused with 403 (DNS rebinding); the port is not
// compared, so SSH tunnels and loopback reverse proxies work.
//
// The door is bounded (doors.go): refusals close their connection,
// NewServer sets read, header and idle timeouts, LimitListener caps
// concurrent connections, and each credential holds at most
// MaxSessionsPerCredential sessions, the least recently used idle one giving
// way to a new one (evict.go).
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
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/logkey"
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
	// Its sessions get session.Identity{Operator: true}: the session layer
	// applies the operator grant in force to every call.
	OperatorToken string
	// IdleTimeout closes sessions that get no request for this long; zero
	// keeps them until the client deletes them or their token is revoked.
	IdleTimeout time.Duration
	// MaxSessionsPerCredential bounds the sessions one token holds; a new
	// session beyond it ends the least recently used one (idle ones first).
	// Zero means DefaultMaxSessionsPerCredential.
	MaxSessionsPerCredential int
	// RecentUse is how long after its last request a session is safe
	// from eviction; zero means the package's RecentUse (a minute).
	RecentUse time.Duration
	// MaxMessage, when set, returns the largest POST body read ([daemon]
	// mcp_max_message_bytes, live); nil or <= 0 takes the go-sdk's default.
	MaxMessage func() int
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
	log = log.With(logkey.Component, "mcp-http")
	if opt.RecentUse <= 0 {
		opt.RecentUse = RecentUse
	}
	if opt.MaxSessionsPerCredential <= 0 {
		opt.MaxSessionsPerCredential = DefaultMaxSessionsPerCredential
	}
	h := &handler{
		opt:     opt,
		log:     log,
		bound:   map[string]*binding{},
		shareds: map[[32]byte]*shared{},
	}
	if opt.OperatorToken != "" {
		sum := sha256.Sum256([]byte(opt.OperatorToken))
		h.operator = &sum
	}
	h.sdk = mcp.NewStreamableHTTPHandler(h.getServer, &mcp.StreamableHTTPOptions{
		Logger: log,
		// No SessionTimeout: its timer is reset only by requests the
		// go-sdk serves, and the fast path serves calls beside it, so the
		// handler keeps the idle timer (sessionfast.go).
		// ServeHTTP has checked Host and Origin already, by the same rule
		// but case-insensitively (the go-sdk refuses "LOCALHOST").
		DisableLocalhostProtection: true,
		// ServeHTTP has read every POST body already, bounded by
		// maxMessage ([daemon] mcp_max_message_bytes), and hands the SDK
		// the bytes: its own default of 4 MiB would refuse what a raised
		// limit allows.
		MaxRequestBodyBytes: -1,
	})
	h.stateless = mcp.NewStreamableHTTPHandler(h.getStatelessServer, &mcp.StreamableHTTPOptions{
		Logger:                     log,
		Stateless:                  true,
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        -1,
	})
	return h
}

type handler struct {
	opt      Options
	log      *slog.Logger
	operator *[32]byte // hash of the operator token; nil when there is none
	sdk      *mcp.StreamableHTTPHandler
	// stateless serves MCP 2026-07-28 requests (stateless.go).
	stateless *mcp.StreamableHTTPHandler

	probeOnce sync.Once
	probe     *mcp.Server

	mu    sync.Mutex
	bound map[string]*binding // MCP session id -> the credential that created it
	// shareds are the servers of stateless requests, per credential hash.
	shareds map[[32]byte]*shared
	clock   uint64 // counts requests to bound sessions, for LRU eviction
	// starting counts, per credential hash, the initializes that were let
	// in and have not yet bound their session or ended (evict.go reserve).
	starting map[[32]byte]int
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
	// Guarded by handler.mu.
	used   uint64    // handler.clock when its latest request started
	last   time.Time // when its latest request started or ended
	active int       // its requests in flight (an open GET stream counts)
	posts  int       // its POSTs in flight, which hold off the idle timer
	posted time.Time // when its latest POST started or ended
	idle   *time.Timer
	// fast is its server's tools/call fast path (sessionfast.go); nil:
	// none. Set at binding.
	fast *session.HTTPFast
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
	held   bool // it holds a place in starting; guarded by handler.mu
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path && r.URL.Path != MetricsPath {
		refuse(w, http.StatusNotFound)
		return
	}
	if !loopbackRequest(r) {
		h.log.Warn("refused request with a foreign Host", logkey.Host, r.Host, logkey.Remote, r.RemoteAddr)
		refuse(w, http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
		h.log.Warn("refused request with a foreign Origin", logkey.Origin, origin, logkey.Remote, r.RemoteAddr)
		refuse(w, http.StatusForbidden)
		return
	}
	if r.URL.Path == MetricsPath {
		h.serveMetrics(w, r)
		return
	}
	sid := r.Header.Get(sessionIDHeader)
	c, err := h.authenticate(r)
	if err != nil {
		h.log.Info("refused unauthenticated request", logkey.Remote, r.RemoteAddr, logkey.Err, err)
		if sid != "" {
			h.endIfRevoked(sid)
		}
		w.Header().Set("WWW-Authenticate", "Bearer")
		refuse(w, http.StatusUnauthorized)
		return
	}

	var body []byte
	if r.Method == http.MethodPost {
		if limit := h.maxMessage(); r.ContentLength > limit {
			// Refused before a byte of it is read: reading up to the
			// limit first left a 200 MB upload's connection closed with
			// no status.
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("request entity too large: a body of %d bytes; this endpoint reads messages of at most %d bytes ([daemon] mcp_max_message_bytes)", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
			return
		}
		if body, err = readBody(w, r, h.maxMessage()); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				w.Header().Set("Connection", "close")
				http.Error(w, fmt.Sprintf("request entity too large: this endpoint reads messages of at most %d bytes ([daemon] mcp_max_message_bytes)", tooBig.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			h.log.Info("refused a request whose body did not arrive", logkey.Remote, r.RemoteAddr, logkey.Err, err)
			refuse(w, http.StatusBadRequest)
			return
		}
		// A tools/call that asks for a task keeps it through the go-sdk
		// (session/tasklift.go).
		if lifted, ok := session.LiftTask(body); ok {
			body = lifted
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
	}

	if ss, ok := h.opt.Sessions.(SharedSessions); ok && wantsStateless(r) {
		h.serveStateless(w, r, c, ss, body)
		return
	}

	if sid != "" {
		b, status := h.lookup(sid, c)
		if status != 0 {
			http.Error(w, strings.ToLower(http.StatusText(status)), status)
			return
		}
		post := r.Method == http.MethodPost
		h.begin(b, post)
		defer h.done(b, post)
		if h.serveSessionFast(w, r, b, sid, body) {
			return
		}
		h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), boundKey, b)))
		if r.Method == http.MethodDelete && findSession(b.server, sid) == nil {
			h.forget(sid) // the client ended its session
		}
		return
	}

	if r.Method == http.MethodPost {
		if isInitialize(body) {
			h.sweep()
			ns := &newSession{c: c}
			if ok, wait := h.reserve(ns); !ok {
				h.log.Info("session cap reached with every session in use; refused a new one",
					logkey.Harness, c.id.Harness, logkey.Operator, c.operator, logkey.Cap, h.opt.MaxSessionsPerCredential)
				refuseFull(w, wait, h.opt.MaxSessionsPerCredential)
				return
			}
			defer h.unreserve(ns) // an initialize that bound nothing
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
		c.id = session.Identity{Operator: true}
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

// lookup checks that sid was created with the caller's credential. It
// returns the binding, or the status to refuse the request with.
func (h *handler) lookup(sid string, c caller) (*binding, int) {
	h.mu.Lock()
	b := h.bound[sid]
	h.mu.Unlock()
	if b == nil {
		return nil, http.StatusNotFound
	}
	if subtle.ConstantTimeCompare(b.hash[:], c.hash[:]) != 1 {
		h.log.Warn("refused a session id presented with another token", logkey.Harness, b.id.Harness, logkey.Operator, b.operator)
		return nil, http.StatusForbidden
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
		h.log.Info("token revoked; ending its HTTP session", logkey.Harness, b.id.Harness)
		h.end(sid, b)
	}
}

func (h *handler) stillValid(b *binding) bool {
	if b.operator {
		return true // the operator token lives as long as the daemon
	}
	_, err := h.opt.Sessions.Authenticate(b.token, false)
	return err == nil
}

// sweep forgets bindings whose session has ended and ends sessions whose
// token was revoked. It runs before every new
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
			h.log.Info("credential no longer valid; ending its HTTP session", logkey.Harness, b.id.Harness, logkey.Operator, b.operator)
			h.end(sid, b)
		}
	}
}

// end closes session sid and forgets its binding.
func (h *handler) end(sid string, b *binding) {
	h.forget(sid)
	h.closeSession(sid, b)
}

// closeSession closes session sid of binding b, already forgotten.
func (h *handler) closeSession(sid string, b *binding) {
	if ss := findSession(b.server, sid); ss != nil {
		if err := ss.Close(); err != nil {
			h.log.Debug("closing HTTP session", logkey.Harness, b.id.Harness, logkey.Err, err)
		}
	}
}

func (h *handler) forget(sid string) {
	h.mu.Lock()
	if b := h.bound[sid]; b != nil && b.idle != nil {
		b.idle.Stop()
	}
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
	var fast *session.HTTPFast
	if fs, ok := h.opt.Sessions.(FastSessions); ok {
		fast = fs.HTTPFastFor(ns.server)
	}
	h.mu.Lock()
	h.unreserveLocked(ns) // the binding counts from here
	h.clock++
	now := time.Now()
	nb := &binding{caller: ns.c, server: ns.server, used: h.clock, last: now, posted: now, fast: fast}
	h.bound[sid] = nb
	h.armIdleLocked(sid, nb)
	evicted := h.evictLocked(sid, nb)
	h.mu.Unlock()
	h.log.Info("HTTP session started", logkey.Harness, ns.c.id.Harness, logkey.Operator, ns.c.operator)
	for vsid, vb := range evicted {
		h.log.Info("session cap reached; ending the least recently used session of this credential",
			logkey.Harness, vb.id.Harness, logkey.Operator, vb.operator, logkey.Cap, h.opt.MaxSessionsPerCredential)
		h.closeSession(vsid, vb)
	}
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

// isInitialize reports whether a POST body holds an initialize request.
func isInitialize(body []byte) bool {
	body = bytes.TrimSpace(body)
	msgs := []json.RawMessage{body}
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return false
		}
	}
	for _, m := range msgs {
		var req struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(m, &req) == nil && req.Method == "initialize" {
			return true
		}
	}
	return false
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
