package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/upauth"
)

// session connects to an upstream over c's transport, lists its tools,
// reports the start, marks the upstream connected and then re-lists on
// tools/list_changed until ctx ends (nil: the run was detached, replaced
// or removed, or the broker closed) or the session ends, whose reason it
// returns: the upstream closed the connection, or (networked) the session
// was dropped. A failed handshake closes the transport at once. Every
// error it records or reports has been through c.explain.
func (b *Broker) session(ctx context.Context, log *slog.Logger, u *upstream, c *conn) error {
	opts := &mcp.ClientOptions{
		Logger: log,
		// No roots; sampling and elicitation are added by their handlers,
		// which ask the session of the call in flight (back.go).
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.relist <- struct{}{}:
			default: // a re-list is already pending; it will see this change too
			}
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case c.relist <- struct{}{}:
			default:
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case c.relist <- struct{}{}:
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			b.resourceUpdated(u.key, req.Params.URI)
		},
		ProgressNotificationHandler: b.onProgress,
		// A proxy must hand input-required results back, not loop on them.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	b.backHandlers(opts, u.unit)
	if t, ok := c.t.(tuner); ok {
		t.tune(opts)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "harness-broker", Version: "1"}, opts)

	cctx, cancelConnect := context.WithTimeout(ctx, b.opts.ConnectTimeout)
	defer cancelConnect()
	t, err := c.t.Dial(cctx)
	if err == nil {
		if _, ok := c.t.(selfCounting); !ok {
			// Progress notifications are counted as the client reads them
			// (see drain); a self-counting transport counts them itself.
			t = &countingTransport{Transport: t, b: b, c: c}
		}
	}
	var cs *mcp.ClientSession
	if err == nil {
		cs, err = client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	}
	if err != nil {
		closeTransport(log, c.t)
		err = c.explain(fmt.Errorf("broker: upstream %s: initialize: %w", u.key, err))
		b.failed(log, u, c, err)
		b.started(u, c, err)
		return err
	}
	// waitDone closes when the connection ends, whoever ends it; waitErr
	// is why, once it is closed.
	waitDone := make(chan struct{})
	var waitErr error
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(waitDone)
		if waitErr = cs.Wait(); waitErr != nil {
			log.Debug("broker: upstream connection ended", logkey.Err, c.explain(waitErr))
		}
	}()
	defer func() {
		if err := cs.Close(); err != nil {
			log.Debug("broker: closing upstream session", logkey.Err, c.explain(err))
		}
		<-waitDone
	}()

	if err := b.list(cctx, log, u, c, cs); err != nil {
		err = c.explain(err)
		b.failed(log, u, c, err)
		b.started(u, c, err)
		return err
	}
	b.listPrompts(cctx, log, u, c, cs)
	b.listResources(cctx, log, u, c, cs)
	cancelConnect()
	b.started(u, c, nil)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-waitDone:
			err := fmt.Errorf("broker: upstream %s: connection closed", u.key)
			if _, ok := c.t.(networked); ok && waitErr != nil {
				err = fmt.Errorf("broker: upstream %s: connection closed: %w", u.key, waitErr)
			}
			err = c.explain(err)
			b.failed(log, u, c, err)
			return err
		case err := <-c.drop:
			err = c.explain(err)
			b.failed(log, u, c, err)
			return err
		case why := <-c.probe:
			if err := b.ping(ctx, cs); err != nil && ctx.Err() == nil {
				log.Debug("broker: the call that asked for the ping", logkey.Err, c.explain(why))
				err = c.explain(fmt.Errorf("broker: upstream %s: a call failed and a ping too: %w", u.key, err))
				b.failed(log, u, c, err)
				return err
			}
		case <-c.relist:
			if err := b.list(ctx, log, u, c, cs); err != nil && ctx.Err() == nil {
				// The session still works for calls; the old list stays.
				err = c.explain(err)
				b.mu.Lock()
				if u.conn == c {
					u.lastErr = err.Error()
				}
				b.mu.Unlock()
				log.Warn("broker: re-listing upstream tools", logkey.Err, err)
			}
			b.listPrompts(ctx, log, u, c, cs)
			b.listResources(ctx, log, u, c, cs)
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
		u.needsLogin = ""
		var login *upauth.LoginError
		if errors.As(err, &login) {
			u.needsLogin = login.Error()
		}
		b.bump()
	}
	b.mu.Unlock()
	if current {
		log.Warn("broker: upstream session failed", logkey.Err, err)
	} else {
		log.Debug("broker: upstream session ended after detach", logkey.Err, err)
	}
}

// started reports the outcome of c's start to whoever handed the run over
// (api.UpstreamRun.Started) while c is still u's current run.
func (b *Broker) started(u *upstream, c *conn, err error) {
	if c.started == nil {
		return
	}
	b.mu.Lock()
	current := u.conn == c && !b.closed
	b.mu.Unlock()
	if current {
		c.started(err)
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
		log.Warn("broker: upstream tool adjusted", logkey.Note, n)
	}
	for _, w := range warnings {
		log.Warn("broker: upstream tool not served", logkey.Warning, w)
	}
	b.mu.Lock()
	mode := u.pin
	b.mu.Unlock()
	// Before the listing is installed: a changed tool is never served,
	// not even for the moment between installing and checking.
	held := b.checkPins(u, mode, set)
	b.mu.Lock()
	if u.conn != c {
		b.mu.Unlock()
		return nil
	}
	u.all, u.listWarnings, u.listed = set, warnings, true
	heldNow := b.setHeldLocked(u, held)
	changed := b.installLocked(u)
	if u.session == nil {
		u.session, u.lastErr, u.needsLogin = cs, "", ""
		log.Info("broker: upstream connected", logkey.Tools, len(u.tools))
	}
	b.bump()
	b.mu.Unlock()
	b.announce(heldNow)
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
		b.log.Debug("broker: progress for no call in flight", logkey.Token, req.Params.ProgressToken)
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
		b.log.Warn("broker: forwarding progress", logkey.Upstream, r.key, logkey.Err, err)
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
