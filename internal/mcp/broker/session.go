package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// serve owns one attached run: it connects, lists the tools, marks the
// upstream connected and then re-lists on tools/list_changed until the run
// is detached, replaced, removed, the broker closes, or the upstream closes
// the connection. A failed handshake or first listing closes the pipes, so
// a well-behaved upstream sees EOF and exits and the supervisor restarts it.
func (b *Broker) serve(ctx context.Context, u *upstream, c *conn, stdin io.WriteCloser, stdout io.ReadCloser) {
	defer b.wg.Done()
	defer c.cancel()
	log := b.log.With("upstream", u.key, "unit", u.unit, "run", c.run)
	client := mcp.NewClient(&mcp.Implementation{Name: "harness-broker", Version: "1"}, &mcp.ClientOptions{
		Logger: log,
		// No roots, sampling or elicitation: the broker answers for nobody.
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.relist <- struct{}{}:
			default: // a re-list is already pending; it will see this change too
			}
		},
		ProgressNotificationHandler: b.onProgress,
		// A proxy must hand input-required results back, not loop on them.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})

	cctx, cancelConnect := context.WithTimeout(ctx, b.opts.ConnectTimeout)
	defer cancelConnect()
	t := &countingTransport{Transport: &jsonl.Transport{Reader: stdout, Writer: stdin}, b: b}
	cs, err := client.Connect(cctx, t,
		&mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		closePipes(log, u.unit, stdin, stdout)
		err = fmt.Errorf("broker: upstream %s: initialize: %w", u.key, err)
		b.failed(log, u, c, err)
		b.started(u, c, err)
		return
	}
	// waitDone closes when the connection ends, whoever ends it.
	waitDone := make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(waitDone)
		if err := cs.Wait(); err != nil {
			log.Debug("broker: upstream connection ended", "error", err)
		}
	}()
	defer func() {
		if err := cs.Close(); err != nil {
			log.Debug("broker: closing upstream session", "error", err)
		}
		<-waitDone
	}()

	if err := b.list(cctx, log, u, c, cs); err != nil {
		b.failed(log, u, c, err)
		b.started(u, c, err)
		return
	}
	cancelConnect()
	b.started(u, c, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-waitDone:
			b.failed(log, u, c, fmt.Errorf("broker: upstream %s: connection closed", u.key))
			return
		case <-c.relist:
			if err := b.list(ctx, log, u, c, cs); err != nil && ctx.Err() == nil {
				// The session still works for calls; the old list stays.
				b.mu.Lock()
				if u.conn == c {
					u.lastErr = err.Error()
				}
				b.mu.Unlock()
				log.Warn("broker: re-listing upstream tools", "error", err)
			}
		}
	}
}

// failed records err for u if c is still its attached run and marks it
// disconnected. Errors of a run that was detached or replaced are only
// logged: the detach reason is the better explanation.
func (b *Broker) failed(log *slog.Logger, u *upstream, c *conn, err error) {
	b.mu.Lock()
	current := u.conn == c
	if current {
		u.session, u.conn.failed = nil, true
		u.lastErr = err.Error()
		b.bump()
	}
	b.mu.Unlock()
	if current {
		log.Warn("broker: upstream session failed", "error", err)
	} else {
		log.Debug("broker: upstream session ended after detach", "error", err)
	}
}

// started reports the outcome of c's start to Options.OnStarted while c is
// still u's attached run.
func (b *Broker) started(u *upstream, c *conn, err error) {
	if b.opts.OnStarted == nil {
		return
	}
	b.mu.Lock()
	current := u.conn == c && !b.closed
	b.mu.Unlock()
	if current {
		b.opts.OnStarted(u.unit, c.run, err)
	}
}

// list fetches every page of tools/list and installs the result; the first
// successful listing of a run is what marks the upstream connected.
func (b *Broker) list(ctx context.Context, log *slog.Logger, u *upstream, c *conn, cs *mcp.ClientSession) error {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("broker: upstream %s: tools/list: %w", u.key, err)
		}
		tools = append(tools, t)
	}
	set, warnings, notes := namespace(u.key, tools)
	for _, n := range notes {
		log.Warn("broker: upstream tool adjusted", "note", n)
	}
	for _, w := range warnings {
		log.Warn("broker: upstream tool not served", "warning", w)
	}
	b.mu.Lock()
	if u.conn != c {
		b.mu.Unlock()
		return nil
	}
	u.all, u.listWarnings, u.listed = set, warnings, true
	changed := b.installLocked(u)
	if u.session == nil {
		u.session, u.lastErr = cs, ""
		log.Info("broker: upstream connected", "tools", len(u.tools))
	}
	b.bump()
	b.mu.Unlock()
	if changed {
		b.fire()
	}
	return nil
}

// progressRoute forwards an upstream's progress notifications for one call
// to the session that asked, under the caller's own token.
type progressRoute struct {
	ctx    context.Context
	token  any
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	key    string

	mu   sync.Mutex
	done bool // the call returned: notify must not run any more

	// read counts this call's notifications the upstream's connection read
	// off the pipe, handled those onProgress finished with; handledCh
	// (buffered 1) is signalled after every handled one. See drain.
	read, handled atomic.Int64
	handledCh     chan struct{}
}

// onProgress is the client's progress handler, shared by every upstream:
// tokens are broker-unique, so the token alone finds the call.
func (b *Broker) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	b.mu.Lock()
	r := b.progress[tok]
	b.mu.Unlock()
	if r == nil {
		b.log.Debug("broker: progress for no call in flight", "token", req.Params.ProgressToken)
		return
	}
	defer r.handledOne()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	p := *req.Params
	p.ProgressToken = r.token
	if err := r.notify(r.ctx, &p); err != nil {
		b.log.Warn("broker: forwarding progress", "upstream", r.key, "error", err)
	}
}

// route registers a progress route and returns the upstream token to send,
// the route, and the function that retires it.
func (b *Broker) route(ctx context.Context, key string, token any, notify func(context.Context, *mcp.ProgressNotificationParams) error) (string, *progressRoute, func()) {
	// Unguessable: the handler is shared by every upstream, and one
	// upstream must not be able to inject progress into another's calls.
	tok := fmt.Sprintf("harness-%s-%d", b.tokenPrefix, b.seq.Add(1))
	r := &progressRoute{ctx: ctx, token: token, notify: notify, key: key, handledCh: make(chan struct{}, 1)}
	b.mu.Lock()
	b.progress[tok] = r
	b.mu.Unlock()
	return tok, r, func() {
		b.mu.Lock()
		delete(b.progress, tok)
		b.mu.Unlock()
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
	}
}
