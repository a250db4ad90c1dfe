package broker

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/upauth"
)

// The one upstream seam. Every run of every upstream reaches the broker the
// same way, as an api.UpstreamRun (Serve); the dynamic type of its Link
// picks the Transport that connects to it, registered for that type with
// RegisterTransport. A process upstream (api.Pipes) and a remote one
// (endpoint.Target, remote.go) are two registrations; a third kind of
// upstream is one more. Everything else (handshake, listings, calls,
// progress, status) is the same code for every kind.

// Transport connects the broker to one run of an upstream.
type Transport interface {
	// Dial returns the MCP transport the run's session runs over; it is
	// called once.
	Dial(ctx context.Context) (mcp.Transport, error)
	// Close releases what the run handed over (pipes, idle connections)
	// once its session is over, or never came up. It may be called more
	// than once.
	Close() error
}

// Env is what the broker tells a transport about the run it serves.
type Env struct {
	Unit, Key string
	Run       uint64
	Logger    *slog.Logger
	// KeepAlive is the ping interval for transports whose peer may vanish
	// unnoticed (remote.go).
	KeepAlive time.Duration
	// Mask hides the daemon's known secrets; nil hides nothing.
	Mask func(string) string
	// CountProgress counts a progress notification's params as they are
	// read, for a transport that reads them itself (selfCounting).
	CountProgress func(params []byte)
	// OAuth authorizes the requests of a networked transport (auth =
	// "oauth"); nil when the upstream does not sign in with OAuth.
	OAuth *upauth.Handler
	// MaxResult bounds one message read from the upstream (max_result_bytes);
	// 0 takes jsonl.DefaultMaxMessage. A larger one is refused as it
	// streams in, and the call it answers fails.
	MaxResult int
}

// Optional capabilities of a Transport, found by type assertion.
type (
	// tuner adjusts the upstream session's client options.
	tuner interface{ tune(*mcp.ClientOptions) }
	// selfCounting transports count progress notifications themselves
	// (Env.CountProgress); the others are wrapped in a countingTransport.
	selfCounting interface{ countsProgress() }
	// resultFilter rewrites a result before it goes back to the caller
	// (masking or scrubbing secrets).
	resultFilter interface {
		filterResult(key string, res *mcp.CallToolResult) (*mcp.CallToolResult, error)
	}
	// networked transports reach a peer whose failures carry more than
	// "closed", whose texts may carry secrets, and whose calls can fail
	// for reasons of the network rather than of the upstream (remote.go).
	networked interface {
		explain(error) error
		logger(*slog.Logger) *slog.Logger
		scrubProgress(notify func(context.Context, *mcp.ProgressNotificationParams) error) func(context.Context, *mcp.ProgressNotificationParams) error
		// watchCall prepares ctx for one call; classify then judges
		// the call's error (ok false: the broker's usual rules apply).
		watchCall(ctx context.Context) (_ context.Context, classify func(ctx context.Context, b *Broker, c *conn, key, tool string, err error) (_ error, ok bool))
	}
)

var (
	transportsMu sync.RWMutex
	transports   = map[reflect.Type]func(link any, env Env) (Transport, error){}
)

// RegisterTransport makes runs whose Link is an L be served by the
// Transport open returns. It panics on a second registration for L; call
// it from an init function.
func RegisterTransport[L any](open func(link L, env Env) (Transport, error)) {
	t := reflect.TypeFor[L]()
	transportsMu.Lock()
	defer transportsMu.Unlock()
	if _, dup := transports[t]; dup {
		panic(fmt.Sprintf("broker: a transport for %v is already registered", t))
	}
	transports[t] = func(link any, env Env) (Transport, error) { return open(link.(L), env) }
}

// openTransport opens the transport registered for link's type.
func openTransport(link any, env Env) (Transport, error) {
	transportsMu.RLock()
	open := transports[reflect.TypeOf(link)]
	transportsMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("broker: no transport serves an upstream link of type %T", link)
	}
	return open(link, env)
}

func init() { RegisterTransport(openPipes) }

// pipeTransport is a process upstream's run: newline-delimited JSON-RPC
// over the child's stdin and stdout. A failed handshake closes the pipes,
// so a well-behaved upstream sees EOF and exits and the supervisor
// restarts it.
type pipeTransport struct {
	p   api.Pipes
	env Env
}

func openPipes(p api.Pipes, env Env) (Transport, error) {
	return &pipeTransport{p: p, env: env}, nil
}

// Dial implements Transport.
func (t *pipeTransport) Dial(context.Context) (mcp.Transport, error) {
	// RefuseOversized: a result over the bound is read past, never held
	// whole, and its call gets an error (callErr) while the session goes on.
	return &jsonl.Transport{Reader: t.p.Stdout, Writer: t.p.Stdin, MaxMessage: t.env.MaxResult, RefuseOversized: true}, nil
}

// Close implements Transport. A pipe the session already closed reports
// os.ErrClosed, which is expected and not logged.
func (t *pipeTransport) Close() error {
	closePipes(t.env.Logger, t.env.Unit, t.p.Stdin, t.p.Stdout)
	return nil
}

// filterResult hides the daemon's known secrets (every env_file value,
// internal/mask) in a process upstream's results, as a remote upstream's
// are scrubbed of its header values: a stdio server whose tool returns
// its environment must not hand its env_file values to every reader.
func (t *pipeTransport) filterResult(key string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if t.env.Mask == nil {
		return res, nil
	}
	return maskResult(res, t.env.Mask, key)
}

// Serve serves one run of an upstream unit, whatever its kind: the
// transport registered for run.Link's type connects to it. It returns at
// once; the handshake (pinned to ProtocolVersion) and the tool listing run
// on their own goroutine, which marks the upstream connected, reports the
// start to run.Started and fires change listeners when the tool list
// changed. The run replaces the unit's current one. The session ends when
// ctx ends, the run is detached or replaced, the unit leaves the
// configuration, the broker closes, or the upstream goes away; then
// run.Ended learns why (nil for the first four). The broker owns what
// the Link hands over from here on.
func (b *Broker) Serve(ctx context.Context, run api.UpstreamRun) {
	log := b.log.With(logkey.Unit, run.Unit, logkey.Run, run.Run)
	b.mu.Lock()
	u := b.ups[run.Unit]
	var key string
	var oauth *upauth.Handler
	var maxResult int
	if u != nil {
		key, maxResult = u.key, u.maxResult
		if u.oauth && b.opts.OAuth != nil {
			// Refreshes go to the authorization server with a client
			// of their own: the upstream's headers are not for it.
			oauth = b.opts.OAuth.Handler(u.unit, u.name(), nil)
		}
	}
	b.mu.Unlock()
	t, err := openTransport(run.Link, Env{Unit: run.Unit, Key: key, Run: run.Run, Logger: log,
		KeepAlive: b.opts.KeepAlive, Mask: b.opts.Mask, CountProgress: b.countProgress, OAuth: oauth, MaxResult: maxResult})
	if err != nil {
		log.Error("broker: run not served", logkey.Err, err)
		report(run.Started, err)
		report(run.Ended, err)
		return
	}

	b.mu.Lock()
	u = b.ups[run.Unit]
	if b.closed || u == nil || run.Run < u.run {
		b.mu.Unlock()
		log.Warn("broker: run ignored", logkey.Reason, "closed, unknown unit or stale run")
		closeTransport(log, t)
		report(run.Ended, fmt.Errorf("broker: upstream unit %s: not served here (closed, unknown or stale run): %w", run.Unit, errcode.ErrUpstreamUnavailable))
		return
	}
	if u.conn != nil {
		u.conn.cancel()
	}
	sctx, cancel := context.WithCancel(b.ctx)
	stopLink := context.AfterFunc(ctx, cancel)
	c := &conn{run: run.Run, cancel: cancel, relist: make(chan struct{}, 1), t: t, started: run.Started,
		drop: make(chan error, 1), probe: make(chan error, 1)}
	u.run, u.conn, u.session, u.nextRetry = run.Run, c, nil, time.Time{}
	b.bump()
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		defer stopLink()
		defer cancel()
		log := log.With(logkey.Upstream, u.key)
		if n, ok := t.(networked); ok {
			log = n.logger(log)
		}
		err := b.session(sctx, log, u, c)
		closeTransport(log, t)
		report(run.Ended, err)
	}()
}

// report calls f with err when f is set.
func report(f func(error), err error) {
	if f != nil {
		f(err)
	}
}

func closeTransport(log *slog.Logger, t Transport) {
	if err := t.Close(); err != nil {
		log.Debug("broker: closing an upstream transport", logkey.Err, err)
	}
}
