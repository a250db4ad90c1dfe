package httpmcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
	"github.com/harness-dev/harness/internal/mcp/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every network wait, so a hang fails the test.
const waitFor = 10 * time.Second

var (
	readTools = mcptest.FacadeTools(api.Read)
	allTools  = mcptest.FacadeTools(api.Read, api.Write)
)

// countingSessions counts the servers built, to prove one per session, and
// keeps them to count the sessions still alive.
type countingSessions struct {
	*session.Manager
	built  atomic.Int32
	shared atomic.Int32

	mu      sync.Mutex
	servers []*mcp.Server
}

// NewSharedServer counts the stateless servers apart.
func (c *countingSessions) NewSharedServer(id session.Identity) *mcp.Server {
	c.shared.Add(1)
	return c.Manager.NewSharedServer(id)
}

func (c *countingSessions) NewServer(id session.Identity) *mcp.Server {
	c.built.Add(1)
	s := c.Manager.NewServer(id)
	c.mu.Lock()
	c.servers = append(c.servers, s)
	c.mu.Unlock()
	return s
}

// liveSessions is the number of go-sdk sessions still open on every server
// built so far.
func (c *countingSessions) liveSessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.servers {
		for range s.Sessions() {
			n++
		}
	}
	return n
}

const operatorToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// env is a real session.Manager behind the handler on a loopback listener.
type env struct {
	ops      *mcptest.Ops
	auth     *mcptest.Auth
	sessions *countingSessions
	h        *handler
	srv      *httptest.Server
	addr     string // 127.0.0.1:PORT
	url      string // http://127.0.0.1:PORT/mcp
}

// newEnv serves a handler as the daemon does (NewServer on a LimitListener),
// with its Options and server changed by each of opts.
func newEnv(t *testing.T, opts ...func(*Options, *http.Server)) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

// newEnvWith is newEnv with ups (a broker; nil: none) behind the sessions.
func newEnvWith(t *testing.T, ups session.Upstreams, opts ...func(*Options, *http.Server)) *env {
	t.Helper()
	e := &env{ops: mcptest.NewOps(), auth: mcptest.NewAuth()}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := session.NewManager(e.ops, e.auth, ups, nil, logger, "test")
	t.Cleanup(m.Close)
	e.sessions = &countingSessions{Manager: m}

	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	e.url = "http://" + e.addr + Path
	opt := Options{
		Sessions:      e.sessions,
		OperatorToken: operatorToken,
		Logger:        logger,
	}
	e.srv = httptest.NewUnstartedServer(nil)
	e.srv.Config = NewServer(nil, logger)
	for _, o := range opts {
		o(&opt, e.srv.Config)
	}
	e.h = NewHandler(opt).(*handler)
	e.srv.Config.Handler = e.h
	e.srv.Listener.Close()
	e.srv.Listener = LimitListener(ln, DefaultMaxConns())
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

// boundCount is the number of sessions the handler holds bindings for.
func (e *env) boundCount() int {
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	return len(e.h.bound)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// httpClient is a client of its own, so its idle connections are closed
// when the test ends.
func httpClient(t *testing.T, token string) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var rt http.RoundTripper = tr
	if token != "" {
		rt = mcptest.Bearer{Token: token, Base: tr}
	}
	return &http.Client{Transport: rt}
}

// connect opens a go-sdk client session over Streamable HTTP with token.
// connect opens a session-based (2025-11-25) session; connectStateless
// speaks 2026-07-28.
func (e *env) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	return e.connectAt(t, token, "2025-11-25")
}

func (e *env) connectStateless(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	return e.connectAt(t, token, "")
}

func (e *env) connectAt(t *testing.T, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: httpClient(t, token), MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func (e *env) mustConnect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := e.connect(t, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}
