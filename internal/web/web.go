// Package web is the daemon's dashboard in a browser (docs/design/web.md): the
// fleet, one harness with its live terminal and waiting prompt, and the
// call log, served on the MCP HTTP listener at "/" from assets embedded in
// the binary. Pages are rendered on the server (html/template); one small
// script (assets/app.js, no inline script: the Content-Security-Policy
// forbids it) keeps them live from the server-sent event stream at
// /events, runs the terminal (the vendored xterm.js) over the WebSocket at
// /h/NAME/attach, and filters the fleet.
//
// The package is a client of the control operations through Backend, as
// the MCP sessions are through session.Ops: every page is an op called with
// a Dashboard caller, and what a signed-in browser may do is its token's
// grant (docs/design/mcp.md) on the facade namespace, checked here on every request before
// the op runs: read shows, write starts, stops, restarts and triggers,
// input types and answers.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/device"
	"github.com/harness-dev/harness/internal/logkey"
)

//go:embed assets
var assetFS embed.FS

//go:embed templates/*.html
var templateFS embed.FS

// Backend is what the dashboard needs of the daemon.
type Backend interface {
	// Call runs a control operation for caller (control.Control.Call).
	Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error)
	// Attach opens a viewer of a harness's terminal (the socket's attach
	// mode): a read-only viewer never writes or resizes.
	Attach(ctx context.Context, caller api.Caller, a api.AttachArgs) (Viewer, error)
	// Subscribe returns the daemon's event stream, as the socket's
	// subscribers get it, until cancel is called. The channel is never
	// closed by the backend; events a slow reader misses are dropped.
	Subscribe() (events <-chan api.Event, cancel func())
	// OperatorGrant is the operator token's grant in force
	// ([daemon] mcp_http_operator_allow).
	OperatorGrant() api.Grant
}

// Viewer is one attached terminal viewer (supervise.Viewer).
type Viewer interface {
	// Next waits for output or a notice; io.EOF after the ended notice.
	Next(ctx context.Context) ([]byte, *api.AttachEvent, error)
	// Input writes keys to the harness; refused for a read-only viewer.
	Input(ctx context.Context, p []byte) error
	// Resize resizes the harness's PTY; refused for a read-only viewer.
	Resize(ctx context.Context, cols, rows int) error
	// Close detaches.
	Close()
}

// Options configure New.
type Options struct {
	// Backend answers the operations; required.
	Backend Backend
	// OperatorToken signs in with the operator grant; empty refuses it.
	OperatorToken string
	// StateDir holds the dashboard tokens (internal/dashtoken).
	StateDir string
	// SessionTTL is how long a sign-in lasts; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// Logger receives the dashboard's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of session expiry; nil means time.Now.
	Now func() time.Time
	// MaxStreams bounds the event streams and terminals open at once, of
	// all sessions; 0 means DefaultMaxStreams. The daemon sets it to a
	// share of the HTTP listener's connections, so the pages can never
	// hold every connection the MCP door needs (streams.go).
	MaxStreams int
	// Devices are the paired devices of the listener for people
	// (devices.go); nil pairs none.
	Devices *device.Store
	// Hosts are host names and addresses accepted in Host and Origin
	// beside loopback ones: the listener for people's own, and
	// public_url's host.
	Hosts []string
	// Links are the action links notifications carry (/a/ID, links.go);
	// nil serves none.
	Links *actionlink.Store
	// Remotes are other machines' fleets shown beside this one's
	// (remotes.go); nil shows none.
	Remotes Remotes
	// TailnetUsers is a tailnet login's grant ([web.users]), asked at
	// every request of the tailnet node (tailnet.go); nil lets no login in.
	TailnetUsers func(login string) (api.Grant, bool)
	// TailnetHosts are the tailnet node's names and addresses, accepted
	// in Host and Origin; known only once the node is up.
	TailnetHosts func() []string
}

// DefaultSessionTTL is how long a sign-in lasts unless configured.
const DefaultSessionTTL = 12 * time.Hour

// Bounds of what one browser may hold or send.
const (
	// maxSessionsPerCredential bounds the live sign-ins of one token (the
	// operator's, or one dashboard token's); past it that token's least
	// recently used session ends.
	maxSessionsPerCredential = 32
	// maxSessions bounds live sign-ins of all tokens; past it a sign-in is
	// refused, never another token's session ended.
	maxSessions = 1024
	// maxForm bounds a POST body (a sign-in, an action, typed text).
	maxForm = 64 << 10
	// eventBuffer is each event stream's queue; past it the page is told to
	// fetch everything again.
	eventBuffer = 64
)

// writeTimeout bounds one write to a browser (an event, a terminal
// frame): a client that stops reading is disconnected. A variable for the
// tests.
var writeTimeout = 10 * time.Second

// Server is the dashboard's http.Handler.
type Server struct {
	opt     Options
	b       Backend
	log     *slog.Logger
	now     func() time.Time
	tokens  *dashtoken.Verifier
	pages   *pages
	static  http.Handler
	ctx     context.Context
	cancel  context.CancelFunc
	hub     *hub
	frags   *fragCache // the fleet's live part as last rendered (fragments.go)
	hubDone chan struct{}
	// recheckDone closes when the recheck of open streams stops (recheck.go).
	recheckDone chan struct{}

	mu       sync.Mutex
	sessions map[string]*session
	streams  streamCount              // guarded by mu
	live     map[*liveStream]struct{} // the open streams; guarded by mu
}

// New returns the dashboard. Close stops its event fan-out.
func New(opt Options) (*Server, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.SessionTTL <= 0 {
		opt.SessionTTL = DefaultSessionTTL
	}
	if opt.MaxStreams <= 0 {
		opt.MaxStreams = DefaultMaxStreams
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opt:      opt,
		b:        opt.Backend,
		log:      log.With(logkey.Component, "web"),
		now:      now,
		tokens:   dashtoken.NewVerifier(opt.StateDir),
		pages:    p,
		static:   http.StripPrefix("/assets/", http.FileServerFS(sub)),
		ctx:      ctx,
		cancel:   cancel,
		hub:      newHub(),
		frags:    &fragCache{},
		hubDone:  make(chan struct{}),
		sessions: map[string]*session{},
		streams:  streamCount{perCredential: map[string]int{}},
		live:     map[*liveStream]struct{}{},

		recheckDone: make(chan struct{}),
	}
	events, unsubscribe := s.b.Subscribe()
	reloads := make(chan struct{}, 1)
	go func() {
		defer close(s.hubDone)
		defer unsubscribe()
		s.hub.run(ctx, events, reloads)
	}()
	go func() {
		defer close(s.recheckDone)
		s.recheckLoop(ctx, reloads)
	}()
	return s, nil
}

// Close ends the event fan-out and every event stream.
func (s *Server) Close() {
	s.cancel()
	<-s.hubDone
	<-s.recheckDone
}

// securityHeaders go on every answer: no script but the dashboard's own
// file, no framing, no sniffing, no referrer to other sites.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "+
		"img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form POST, which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP checks Host and Origin like the MCP door, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if !s.hostAllowed(r) {
		s.log.Warn("refused request with a foreign Host", logkey.Host, r.Host, logkey.Remote, r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, "this dashboard answers only to a loopback host name")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
		s.log.Warn("refused request with a foreign Origin", logkey.Origin, origin, logkey.Remote, r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, "cross-origin requests are refused")
		return
	}
	if s.refuseUnknownLogin(w, r) {
		return
	}
	path := r.URL.Path
	if s.serveApp(w, r) {
		return
	}
	switch {
	case strings.HasPrefix(path, "/assets/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.fail(w, r, http.StatusMethodNotAllowed, "assets are read with GET")
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		s.static.ServeHTTP(w, r)
	case strings.HasPrefix(path, "/a/"):
		s.serveLink(w, r)
	case path == "/login":
		s.serveLogin(w, r)
	case path == "/logout":
		s.serveLogout(w, r)
	case path == PairPath:
		s.servePair(w, r)
	default:
		s.serveSignedIn(w, r)
	}
}

// serveSignedIn routes the pages that need a session.
func (s *Server) serveSignedIn(w http.ResponseWriter, r *http.Request) {
	sess, grant, ok := s.session(r)
	if login, on := tailnetLogin(r); on {
		sess, grant, ok = s.tailnetSession(w, r, login, sess, grant, ok)
	} else if !ok {
		sess, grant, ok = s.deviceSession(w, r)
	}
	if !ok {
		if r.Method == http.MethodGet && r.Header.Get("Upgrade") == "" && r.URL.Path != "/events" && r.URL.Path != "/waiting" {
			http.Redirect(w, r, loginPath(r), http.StatusSeeOther)
			return
		}
		s.fail(w, r, http.StatusUnauthorized, "sign in first")
		return
	}
	rq := &request{sess: sess, grant: grant}
	path := r.URL.Path
	if r.Method == http.MethodPost {
		if !s.checkCSRF(r, sess) {
			s.log.Warn("refused a POST without its CSRF token", logkey.Remote, r.RemoteAddr)
			s.fail(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
			return
		}
		if path == newPath {
			s.serveNew(w, r, rq)
			return
		}
		if strings.HasPrefix(path, "/host/") {
			s.serveRemoteAction(w, r, rq)
			return
		}
		name, action, ok := harnessPath(r.URL.EscapedPath())
		if !ok || action == "" || action == "attach" {
			s.fail(w, r, http.StatusNotFound, "no such action")
			return
		}
		s.serveAction(w, r, rq, name, action)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if strings.HasPrefix(path, "/host/") {
		s.serveRemoteHarness(w, r, rq)
		return
	}
	switch path {
	case "/":
		s.serveFleet(w, r, rq)
		return
	case "/calls":
		s.serveCalls(w, r, rq)
		return
	case newPath:
		s.serveNew(w, r, rq)
		return
	case "/events":
		s.serveEvents(w, r, rq)
		return
	case "/waiting":
		s.serveWaiting(w, r, rq)
		return
	}
	name, action, ok := harnessPath(r.URL.EscapedPath())
	switch {
	case ok && action == "":
		s.serveHarness(w, r, rq, name)
	case ok && action == "attach":
		s.serveAttach(w, r, rq, name)
	default:
		s.fail(w, r, http.StatusNotFound, "no such page")
	}
}

// harnessPath splits /h/NAME and /h/NAME/ACTION, path as it was sent
// (URL.EscapedPath): NAME is one escaped segment, so a project harness's
// "project/name" comes as project%2Fname (hpath).
func harnessPath(path string) (name, action string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/h/")
	if !ok || rest == "" {
		return "", "", false
	}
	seg, action, _ := strings.Cut(rest, "/")
	if strings.Contains(action, "/") {
		return "", "", false
	}
	name, err := url.PathUnescape(seg)
	if err != nil || name == "" {
		return "", "", false
	}
	return name, action, true
}

// request is one signed-in request: its session and the grant in force.
type request struct {
	sess  *session
	grant api.Grant
}

// may reports whether the grant covers class on the facade.
func (rq *request) may(c api.Class) bool { return rq.grant.Allows(api.FacadeNamespace, c) }

// caller is who the operations see: the dashboard, never the operator's
// socket authority (so describe hides env values, as for MCP sessions).
var caller = api.Caller{Kind: api.Dashboard}

// call runs op with args marshalled, decoding its answer into out.
func (s *Server) call(ctx context.Context, op string, args any, out any) error {
	return s.callFor(ctx, caller, op, args, out)
}

// callAs is call for rq's session: the audit log names its token.
func (s *Server) callAs(ctx context.Context, rq *request, op string, args any, out any) error {
	return s.callFor(ctx, s.callerOf(rq), op, args, out)
}

// callerOf is the caller of rq's session: the page and its token, or
// the paired device.
func (s *Server) callerOf(rq *request) api.Caller {
	c := caller
	c.Door, c.Actor = api.DoorPage, rq.sess.credential()
	if rq.sess.device != "" {
		c.Door = api.DoorDevice
	}
	if rq.sess.tailnet != "" {
		c.Door = api.DoorTailnet
	}
	return c
}

func (s *Server) callFor(ctx context.Context, c api.Caller, op string, args any, out any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	res, err := s.b.Call(ctx, c, op, raw)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
