// Package session serves MCP to downstream sessions: one go-sdk mcp.Server
// per session (the go-sdk has no per-session tool list), carrying the facade
// tools the session may call, the broker's namespaced upstream tools and the
// prompts. Scope is looked up per call from the live config, never cached
// from the handshake; Refresh re-lists every session after a reload so the
// go-sdk sends notifications/tools/list_changed to the sessions whose view
// changed.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// Ops runs control operations; *control.Control implements it.
type Ops interface {
	Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error)
}

// Authority answers who a session is and what it may do, from the live
// config and the token registry.
type Authority interface {
	// ResolveToken maps a per-spawn token to its harness; false when the token
	// is unknown or revoked (its run ended). Comparison must be constant-time.
	ResolveToken(token string) (harness string, ok bool)
	// Grant is the harness's grant in force (its mcp_allow, or the project
	// rule for a project's harness); false when the harness is gone.
	Grant(harness string) (api.Grant, bool)
	// OperatorGrant is the HTTP operator token's grant in force
	// ([daemon] mcp_http_operator_allow).
	OperatorGrant() api.Grant
	// Project is the harness's project, "" for global harnesses.
	Project(harness string) string
}

// Upstreams is the broker's view for sessions. It may be nil (no broker).
type Upstreams interface {
	// Tools are the namespaced KEY__tool tools visible to sessions of project,
	// with their upstream schemas and annotations unchanged, each with its
	// class (excluded tools are not among them).
	Tools(project string) []broker.Tool
	// Call proxies one call if permit allows the class of the tool it
	// resolves, forwarding progress through notify.
	Call(ctx context.Context, project, name string, args json.RawMessage, permit broker.Permit, progressToken any,
		notify func(context.Context, *mcp.ProgressNotificationParams) error) (*mcp.CallToolResult, error)
	// Known tells an unknown namespace from an unknown tool in a known one.
	Known(project, name string) (namespaceKnown, toolKnown bool)
	// WaitStarting returns once no upstream visible to project is still
	// starting, or when ctx ends.
	WaitStarting(ctx context.Context, project string)
}

// Prompts is the current prompt set. It may be nil (no prompts configured).
type Prompts interface {
	Prompts() []*mcp.Prompt
	Get(name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// Identity is who a session is, fixed at the handshake.
type Identity struct {
	// Harness is the attributed harness, "" for an unattributed session.
	Harness string
	// AllowControl is the bridge's --allow-control flag; it grants bare
	// write (never input) to unattributed sessions only.
	AllowControl bool
	// Operator marks a session opened with the HTTP operator token: its
	// grant is the live [daemon] mcp_http_operator_allow.
	Operator bool
	// Bridge is the grant of an unattributed session from across SSH, what
	// `harness bridge --grant` allows that key; nil otherwise.
	Bridge *api.Grant
	// Via names a bridged session's key for the audit log (ssh:KEY).
	Via string
	// Token is what attributed the session. It is resolved again on every
	// call: a token dies with its run, and so does what it granted.
	Token string
}

// ErrClosed is returned by Serve when the Manager is closed.
var ErrClosed = errors.New("session: manager closed")

// Manager builds and tracks the MCP servers of all downstream sessions.
type Manager struct {
	ops     Ops
	auth    Authority
	ups     Upstreams
	prompts func() Prompts
	log     *slog.Logger
	version string
	rec     CallRecorder // the call log; nil records nothing (record.go)
	tracer  CallTracer   // nil while telemetry is off (trace.go)

	// ctx ends with Close; every tool call is bound to it so Close cannot
	// wait forever on an in-flight handler.
	ctx    context.Context
	cancel context.CancelFunc

	// maxMessage bounds one inbound message of a new session (0: the
	// transport's default); SetMaxMessage changes it.
	maxMessage atomic.Int64
	// fastOff turns the tools/call fast path off (fast.go); fastServed
	// counts the calls it took.
	fastOff    atomic.Bool
	fastServed atomic.Uint64

	// tasks are the delegations running as MCP tasks (tasks.go); rounds
	// the stateless calls whose upstream waits on the client (rounds.go).
	tasks  tasks
	rounds rounds

	mu     sync.Mutex
	closed bool
	live   map[*live]struct{}
	serves sync.WaitGroup
}

// NewManager returns a Manager. ops and auth are required; ups, prompts (and
// the Prompts it returns) may be nil.
func NewManager(ops Ops, auth Authority, ups Upstreams, prompts func() Prompts, logger *slog.Logger, version string) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		ops: ops, auth: auth, ups: ups, prompts: prompts,
		log: logger.With(logkey.Component, "mcp-session"), version: version,
		ctx: ctx, cancel: cancel,
		live: make(map[*live]struct{}),
	}
	m.fastOff.Store(!fastPathDefault())
	return m
}

// SetMaxMessage bounds one inbound message of the sessions Serve starts
// from now on ([daemon] mcp_max_message_bytes): a larger one is answered
// with an error and skipped, never read into memory. 0 restores the
// transport's default.
func (m *Manager) SetMaxMessage(n int) { m.maxMessage.Store(int64(n)) }

// Authenticate turns what the bridge presented into an Identity. An empty
// token is an unattributed session; an unknown or revoked token is refused
// with errcode.ErrNotPermitted.
func (m *Manager) Authenticate(token string, allowControl bool) (Identity, error) {
	if token == "" {
		return Identity{AllowControl: allowControl}, nil
	}
	if m.auth != nil {
		if h, ok := m.auth.ResolveToken(token); ok {
			return Identity{Harness: h, AllowControl: allowControl, Token: token}, nil
		}
	}
	return Identity{}, fmt.Errorf("session: authenticate: unknown or revoked token: %w", errcode.ErrNotPermitted)
}

// Serve runs one MCP session over a newline-delimited JSON-RPC stream until
// the peer closes it (nil), ctx ends (ctx's error) or the Manager is closed
// (ErrClosed). rwc is closed when Serve returns.
func (m *Manager) Serve(ctx context.Context, rwc io.ReadWriteCloser, id Identity) error {
	l, err := m.register(id, true)
	if err != nil {
		m.closeLogged(rwc, id)
		return err
	}
	defer m.serves.Done()
	defer m.unregister(l)

	// A client's bad line is answered (parse error, id null), not the end
	// of its session and of the answers it is owed.
	tr := &jsonl.Transport{Reader: rwc, Writer: rwc, AnswerInvalid: true, MaxMessage: int(m.maxMessage.Load())}
	// Calls the fast path took end with the session, as the go-sdk's
	// handlers do, and are waited for.
	defer l.endFast()
	fu, ok := m.ups.(FastUpstreams)
	if !ok || m.fastOff.Load() {
		fu = nil
	}
	tr.Intercept = l.intercept(ctx, fu)
	ss, err := l.server.Connect(ctx, tr, nil)
	if err != nil {
		m.closeLogged(tr, id)
		return fmt.Errorf("session: connect: %w", err)
	}
	l.ss.Store(ss)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()

	var reason error
	select {
	case err := <-done:
		// Close or ctx may have ended the session's last call, and with
		// it a half-closed peer's session, before this select ran: the
		// reason is then theirs, not the peer's.
		switch {
		case m.ctx.Err() != nil:
			return ErrClosed
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("session %s: connection: %w", l.label(), err)
		}
		return nil
	case <-ctx.Done():
		reason = ctx.Err()
	case <-m.ctx.Done():
		reason = ErrClosed
	}
	// Closing the connection (rather than ss.Close, which waits for
	// in-flight calls first) ends the jsonrpc2 reader, which cancels every
	// in-flight handler; then the session drains. (Not the stream alone: a
	// reader holding a half-closed peer's EOF back waits on the connection.)
	m.closeLogged(tr, id)
	if err := <-done; err != nil {
		m.log.Debug("session ended after close", logkey.Session, l.label(), logkey.Err, err)
	}
	return reason
}

// NewServer builds the server of one session for a transport that manages
// its own connections (Streamable HTTP): connect exactly one session to it.
// The server follows Refresh while it lives; once its session has come and
// gone it is dropped at the next Refresh.
func (m *Manager) NewServer(id Identity) *mcp.Server {
	m.mu.Lock()
	m.pruneLocked()
	m.mu.Unlock()
	l, err := m.register(id, false)
	if err != nil {
		// Closed: a server nobody tracks still answers by the same rules,
		// and Close has already run, so there is nothing to end later.
		m.log.Warn("new server after close", logkey.Harness, id.Harness, logkey.Err, err)
		l = m.build(id)
		l.refresh()
	}
	return l.server
}

// NewSharedServer builds the server of one identity for a transport that
// connects a short session per request (stateless Streamable HTTP, MCP
// 2026-07-28): many sessions, one after another or at once, share it. It
// also negotiates 2026-07-28. It follows Refresh until DropServer.
func (m *Manager) NewSharedServer(id Identity) *mcp.Server {
	l := m.buildWith(id, mcp.SupportedProtocolVersions())
	l.shared = true
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		l.refresh()
		return l.server
	}
	m.live[l] = struct{}{}
	m.mu.Unlock()
	l.refresh()
	return l.server
}

// DropServer stops refreshing a server NewSharedServer built.
func (m *Manager) DropServer(s *mcp.Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.live {
		if l.server == s {
			delete(m.live, l)
		}
	}
}

// unclaimedGrace is how long a server built for an HTTP initialize may go
// without a session before Refresh forgets it.
const unclaimedGrace = time.Minute

// Refresh recomputes every live session's visible tools and prompts and
// updates its server; the go-sdk notifies a session only if its view changed.
func (m *Manager) Refresh() {
	m.mu.Lock()
	m.pruneLocked()
	all := make([]*live, 0, len(m.live))
	for l := range m.live {
		all = append(all, l)
	}
	m.mu.Unlock()
	for _, l := range all {
		l.refresh()
	}
}

// pruneLocked forgets HTTP sessions that have ended, or whose initialize
// never completed (refused by the transport, or a client that vanished).
// Caller holds m.mu.
func (m *Manager) pruneLocked() {
	for l := range m.live {
		if !l.owned && !l.shared && sessionCount(l.server) == 0 && (l.connected.Load() || time.Since(l.built) > unclaimedGrace) {
			delete(m.live, l)
		}
	}
}

// Close ends every session and waits for Serve calls to return. In-flight
// tool calls see their context cancelled.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	var unowned []*live
	for l := range m.live {
		if !l.owned {
			unowned = append(unowned, l)
		}
	}
	m.live = map[*live]struct{}{}
	m.mu.Unlock()

	m.cancel()
	for _, l := range unowned {
		for ss := range l.server.Sessions() {
			if err := ss.Close(); err != nil {
				m.log.Warn("closing session", logkey.Session, l.label(), logkey.Err, err)
			}
		}
	}
	m.serves.Wait()
	m.endTasks()
}

// register builds a session's server and tracks it; owned sessions are
// counted for Close to wait on.
func (m *Manager) register(id Identity, owned bool) (*live, error) {
	l := m.build(id)
	l.owned = owned
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.live[l] = struct{}{}
	if owned {
		m.serves.Add(1)
	}
	m.mu.Unlock()
	// Tracked before the first listing, so a Refresh racing with this one
	// cannot leave the session on a view older than the config.
	l.refresh()
	return l, nil
}

func (m *Manager) unregister(l *live) {
	m.mu.Lock()
	delete(m.live, l)
	m.mu.Unlock()
}

func (m *Manager) closeLogged(c io.Closer, id Identity) {
	if err := c.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		m.log.Debug("closing session stream", logkey.Harness, id.Harness, logkey.Err, err)
	}
}

// build makes the go-sdk server of one session, with no tools yet.
func (m *Manager) build(id Identity) *live { return m.buildWith(id, handshakeVersions()) }

// buildWith is build negotiating versions.
func (m *Manager) buildWith(id Identity, versions []string) *live {
	l := &live{m: m, id: id, tools: map[string]string{}, prompts: map[string]string{}, typedTools: map[string]bool{}, built: time.Now(),
		resources: map[string]string{}, templates: map[string]string{}}
	l.server = mcp.NewServer(&mcp.Implementation{Name: "harness", Version: m.version}, &mcp.ServerOptions{
		Logger:                    m.log,
		SupportedProtocolVersions: versions,
		// Advertised even when empty, so a session that starts with no
		// prompts still learns about prompts a reload adds.
		Capabilities: &mcp.ServerCapabilities{
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Prompts: &mcp.PromptCapabilities{ListChanged: true},
			// Upstreams' log messages reach the session of the call.
			Logging:   &mcp.LoggingCapabilities{},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   l.subscribe,
		UnsubscribeHandler: l.unsubscribe,
		// Declared only to sessions an upstream completes for
		// (completionsCapMiddleware).
		CompletionHandler:  l.complete,
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { l.connected.Store(true) },
	})
	// taskCapsMiddleware wraps the answers completionsCapMiddleware edits
	// in place, so it runs outside it.
	l.server.AddReceivingMiddleware(l.recordMiddleware, l.callMiddleware, l.firstListMiddleware, l.taskCapsMiddleware, l.completionsCapMiddleware, l.levelMiddleware)
	l.addTaskMethods()
	return l
}

// handshakeVersions are the protocol versions negotiated with the classic
// initialize handshake (the socket, and session-based HTTP). 2026-07-28 and
// later are served statelessly (NewSharedServer, httpmcp/stateless.go); a
// go-sdk client's server/discover that reaches a session-based server fails
// with the supported list, so it falls back to initialize at 2025-11-25.
func handshakeVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

func sessionCount(s *mcp.Server) int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// live is one session's server and the view last applied to it.
type live struct {
	m         *Manager
	id        Identity
	server    *mcp.Server
	owned     bool        // run by Serve, which unregisters it
	shared    bool        // NewSharedServer's: kept until DropServer
	connected atomic.Bool // initialized at least once (for pruning NewServer sessions)
	built     time.Time   // when NewServer made it (for pruning ones never initialized)
	rec       callerInfo  // who calls, for the call log (record.go)

	// ss is the session Serve connected (nil until then, and for servers
	// of other transports); fast its calls the fast path took (fast.go).
	ss   atomic.Pointer[mcp.ServerSession]
	fast fastCalls
	// logLevelSet: the client set a log level (levelMiddleware), so an
	// HTTP session's calls keep the go-sdk path (fastsession.go).
	logLevelSet atomic.Bool

	// listedOnce is set by the session's first tools/list, which waits for
	// starting upstreams (firstListMiddleware).
	listedOnce atomic.Bool
	// foundOnce is set by the first harness_find_tools, which waits the
	// same way (search.go).
	foundOnce atomic.Bool

	// viewMu serialises refreshes of this one session; calls never take it.
	viewMu  sync.Mutex
	tools   map[string]string // registered tool name -> fingerprint
	prompts map[string]string // registered prompt name -> fingerprint
	// resources and templates: registered URI (template) -> fingerprint.
	resources, templates map[string]string

	// typedTools are the tools ever listed with an output schema; calls
	// read it, refreshes add to it (see untyped).
	typedMu     sync.Mutex
	typedTools  map[string]bool
	headedTools map[string]bool // listed with x-mcp-header parameters (headed)
}

func (l *live) label() string {
	switch {
	case l.id.Operator:
		return "(operator)"
	case l.id.Harness == "":
		return "(unattributed)"
	}
	return l.id.Harness
}
