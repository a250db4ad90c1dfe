package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/traceparent"
	"github.com/harness-dev/harness/internal/upauth"
)

// Remote upstreams (docs/design/mcp.md): the same session, tools, calls and
// progress as a process upstream, over the go-sdk's Streamable HTTP client
// transport: the transport registered for an endpoint.Target link. The
// supervisor owns the connection's life (Serve starts one run, its context
// ends it, Ended reports its end); this transport adds the headers to
// every request, notices a session that is gone, and keeps every secret
// out of what the broker records, logs and answers (networked).

// remoteSSERetries is how often the transport tries to resume an SSE
// stream before it fails the connection. Small: reconnecting is the
// supervisor's job, with restart_delay and the process backoff, and a
// dead server must show as down within seconds, not after the SDK's 5
// retries with growing delays.
const remoteSSERetries = 2

// codeRejected is the go-sdk's "rejected by transport" (its internal
// jsonrpc2.ErrRejected): the request never got an answer from the server,
// which for HTTP means it was not reached.
const codeRejected = -32005

// probeTimeout bounds the ping that decides whether a failed call means
// the session is gone.
const probeTimeout = 5 * time.Second

func init() { RegisterTransport(openRemote) }

// openRemote is the transport of a remote upstream's run: target is the
// URL and the expanded headers, secrets included, held only for the run.
func openRemote(target endpoint.Target, env Env) (Transport, error) {
	rc := newRemoteConn(env.Key, target.URL, target.Header, target.Secrets, env.CountProgress)
	rc.keepAlive, rc.oauth = env.KeepAlive, env.OAuth
	rc.maxResult = cmp.Or(env.MaxResult, jsonl.DefaultMaxMessage)
	rc.client.Transport.(*headerTransport).limit = rc.maxResult
	return rc, nil
}

// Dial implements Transport.
func (rc *remoteConn) Dial(context.Context) (mcp.Transport, error) {
	// The go-sdk's own event bound, which fails the whole connection,
	// stays above ours (bound.go), which fails only the call.
	t := &mcp.StreamableClientTransport{Endpoint: rc.url, HTTPClient: rc.client, MaxRetries: remoteSSERetries,
		MaxEventSize: 2*rc.maxResult + 64<<10}
	if rc.oauth != nil {
		t.OAuthHandler = rc.oauth
	}
	return t, nil
}

// Close implements Transport: no idle socket outlives the run.
func (rc *remoteConn) Close() error {
	rc.transport.CloseIdleConnections()
	return nil
}

// tune pings the server while nobody calls it, so a server that went away
// is noticed.
func (rc *remoteConn) tune(o *mcp.ClientOptions) { o.KeepAlive = rc.keepAlive }

// countsProgress: the event streams count progress (progress_sse.go).
func (rc *remoteConn) countsProgress() {}

// logger scrubs this connection's secrets from everything logged about
// it, the go-sdk's client logs included.
func (rc *remoteConn) logger(l *slog.Logger) *slog.Logger {
	return slog.New(scrubHandler{h: l.Handler(), scrub: rc.scrub}).With(logkey.URL, rc.shown)
}

// watchCall notes the HTTP status of the call's own requests, for
// callErr.
func (rc *remoteConn) watchCall(ctx context.Context) (context.Context, func(context.Context, *Broker, *conn, string, string, error) (error, bool)) {
	st := &callStatus{}
	return context.WithValue(ctx, callStatusKey{}, st), func(ctx context.Context, b *Broker, c *conn, key, tool string, err error) (error, bool) {
		return b.remoteCallErr(ctx, c, rc, st, key, tool, err)
	}
}

// remoteConn is what the broker keeps of one connection to a remote
// upstream: its HTTP client, the last error status it saw and how to
// scrub its secrets.
type remoteConn struct {
	key       string
	oauth     *upauth.Handler // auth = "oauth"; nil otherwise
	url       string
	keepAlive time.Duration
	maxResult int    // max_result_bytes
	shown     string // the URL as it may be shown (endpoint.Redact)
	scrub     func(string) string
	// scrubJSON is scrub for JSON text (each secret also as JSON escapes
	// it), nil when there is nothing to hide.
	scrubJSON func(string) string
	transport *http.Transport // this connection's own: no idle socket outlives it
	client    *http.Client

	mu   sync.Mutex
	last int // the last HTTP error status an answer carried, 0 after a success
}

func newRemoteConn(key, url string, header http.Header, secrets []string, count func([]byte)) *remoteConn {
	rc := &remoteConn{key: key, url: url, shown: endpoint.Redact(url), scrub: endpoint.Scrub(secrets)}
	if inJSON := jsonForms(secrets); len(inJSON) > 0 {
		rc.scrubJSON = endpoint.Scrub(inJSON)
	}
	rc.transport = http.DefaultTransport.(*http.Transport).Clone()
	// No client timeout: the SSE streams are long-lived. initialize is
	// bounded by the connect timeout and each call by its context.
	rc.client = &http.Client{Transport: &headerTransport{base: rc.transport, header: header, rc: rc, count: count}}
	return rc
}

// jsonForms is each secret long enough to hide, as it is and as JSON
// escapes it.
func jsonForms(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if len(s) < endpoint.MinSecret {
			continue
		}
		q, _ := json.Marshal(s) // a string always marshals
		out = append(out, s, string(q[1:len(q)-1]))
	}
	return out
}

// scrubResult hides this connection's secrets in a tool result: a server
// that echoes the request (a whoami tool, an error quoting its headers)
// must not hand the credential to the agent that called it. A result
// without a secret is returned as it came.
func (rc *remoteConn) filterResult(_ string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	scrub := rc.scrubJSON
	if rc.oauth != nil {
		// The OAuth tokens change with every refresh: the ones in use
		// now, as the result could echo them.
		if toks := rc.oauth.Tokens(); len(toks) > 0 {
			tokScrub := endpoint.Scrub(jsonForms(toks))
			if prev := scrub; prev != nil {
				scrub = func(s string) string { return tokScrub(prev(s)) }
			} else {
				scrub = tokScrub
			}
		}
	}
	if scrub == nil {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("broker: upstream %s: encode a result to scrub it: %v: %w", rc.key, err, errcode.ErrInternal)
	}
	clean := scrub(string(raw))
	if clean == string(raw) {
		return res, nil
	}
	out := new(mcp.CallToolResult)
	if err := json.Unmarshal([]byte(clean), out); err != nil {
		return nil, fmt.Errorf("broker: upstream %s: decode a scrubbed result: %v: %w", rc.key, err, errcode.ErrInternal)
	}
	return out, nil
}

// scrubProgress is notify with the secrets hidden from each progress
// message.
func (rc *remoteConn) scrubProgress(notify func(context.Context, *mcp.ProgressNotificationParams) error) func(context.Context, *mcp.ProgressNotificationParams) error {
	return func(ctx context.Context, p *mcp.ProgressNotificationParams) error {
		if clean := rc.scrub(p.Message); clean != p.Message {
			c := *p
			c.Message = clean
			p = &c
		}
		return notify(ctx, p)
	}
}

// note records the status of an answer from the server.
func (rc *remoteConn) note(code int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if code >= 400 {
		rc.last = code
	} else {
		rc.last = 0
	}
}

func (rc *remoteConn) lastStatus() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.last
}

// statusText reads "HTTP 401 Unauthorized from https://host/mcp".
func (rc *remoteConn) statusText(code int) string {
	return fmt.Sprintf("HTTP %d %s from %s", code, http.StatusText(code), rc.shown)
}

// authText is what a refused credential reads as.
func (rc *remoteConn) authText(code int) string {
	if rc.oauth != nil {
		return fmt.Sprintf("%s: the OAuth token was refused; if this persists, %s", rc.statusText(code), upauth.Hint(rc.key))
	}
	return fmt.Sprintf("%s: check the headers of [mcp.%s] and the env_file or env values they use", rc.statusText(code), rc.key)
}

// explain turns an error of this connection into what the broker may
// record, log and answer: a refused credential (401, 403) is said as
// such, and every secret is scrubbed. The result still matches what err
// matched with errors.Is and errors.As.
func (rc *remoteConn) explain(err error) error {
	if err == nil {
		return err
	}
	msg := err.Error()
	var login *upauth.LoginError
	if errors.As(err, &login) {
		// Holds no secret, and says what to do.
		return &scrubbedError{msg: "broker: " + login.Error(), err: err}
	}
	if code := rc.lastStatus(); code == http.StatusUnauthorized || code == http.StatusForbidden {
		// The go-sdk's text ("sending \"initialize\": Unauthorized") adds
		// nothing to this.
		msg = fmt.Sprintf("broker: upstream %s: %s", rc.key, rc.authText(code))
	}
	return &scrubbedError{msg: rc.scrub(msg), err: err}
}

// scrubbedError carries a scrubbed message for an error whose own message
// may hold a secret.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// headerTransport sets the configured headers on every request of one
// connection and notes the status of every answer: per connection for
// explain, per call (callStatus in the request's context) for Call.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	rc     *remoteConn
	// count sees the params of every progress notification an event
	// stream carries, as the client reads it (progress_sse.go).
	count func(params []byte)
	// limit bounds one message of an answer (max_result_bytes, bound.go);
	// 0 leaves answers unbounded.
	limit int
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	if tp, ok := traceparent.From(req.Context()); ok {
		req.Header.Set(traceparent.Header, tp.String())
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.rc.note(resp.StatusCode)
	st, _ := req.Context().Value(callStatusKey{}).(*callStatus)
	if t.limit > 0 && resp.Body != nil {
		resp.Body = newHeldBody(resp.Body, t.limit, isEventStream(resp.Header.Get("Content-Type")), st)
	}
	if t.count != nil && resp.Body != nil && isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = &sseCounter{ReadCloser: resp.Body, count: t.count}
	}
	if st != nil && resp.StatusCode >= 400 {
		st.set(resp.StatusCode)
	}
	return resp, nil
}

// callStatus is the first HTTP error status the requests of one call got.
type callStatus struct {
	mu        sync.Mutex
	code      int
	refusedAt int // an answer was refused at this many bytes (bound.go)
}

type callStatusKey struct{}

func (s *callStatus) set(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.code = code
	}
}

func (s *callStatus) get() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// transientStatus: the server is up but asks to come back later; the
// session stays (as the go-sdk keeps it).
func transientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// remoteCallErr classifies a failed call to a remote upstream, before
// callErr sees it: an HTTP error status on the call's own requests is an
// outage, not the upstream's answer (a refused credential or a session the
// server no longer knows ends the session, which the supervisor then
// reconnects; a transient status keeps it); a call that never reached the
// server asks for a ping, and a failed ping ends the session. ok is false
// when callErr should classify err itself (an answer, a timeout, the
// caller's cancellation). Every message is scrubbed.
func (b *Broker) remoteCallErr(ctx context.Context, c *conn, rc *remoteConn, st *callStatus, key, tool string, err error) (error, bool) {
	var rpc *jsonrpc.Error
	var login *upauth.LoginError
	code := st.get()
	switch {
	case st.refused() > 0:
		// A JSON answer's failed read failed the go-sdk's connection
		// (an event stream's did not: the call alone ended).
		out := fmt.Errorf("broker: upstream %s: tools/call %s: the answer exceeds %d bytes (max_result_bytes of [mcp.%s]): %w", key, tool, st.refused(), key, errcode.ErrUpstreamUnavailable)
		select {
		case c.probe <- err:
		default:
		}
		b.log.Warn("broker: upstream result refused: too large", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, out)
		return out, true
	case errors.As(err, &rpc) && rpc.Code == jsonl.CodeTooLarge:
		return nil, false // callErr says it
	case errors.As(err, &login):
		// No usable token: nothing to ping, the session is over until
		// someone signs in.
		out := fmt.Errorf("broker: %w", login) // upstream_unavailable
		drop(c, out)
		b.log.Warn("broker: remote upstream needs a login", logkey.Upstream, key, logkey.Tool, tool, logkey.Reason, login.Why)
		return out, true
	case code != 0:
		what := rc.statusText(code)
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			what = rc.authText(code)
		}
		out := fmt.Errorf("broker: upstream %s: tools/call %s: %s: %w", key, tool, what, errcode.ErrUpstreamUnavailable)
		if !transientStatus(code) {
			drop(c, out)
		}
		b.log.Warn("broker: remote upstream refused a call", logkey.Upstream, key, logkey.Tool, tool, logkey.Status, code, logkey.Err, rc.scrub(err.Error()))
		return &scrubbedError{msg: rc.scrub(out.Error()), err: out}, true
	case errors.As(err, &rpc) && rpc.Code != codeRejected:
		// The server's own answer: its message stays, scrubbed all the same.
		scrubbed := *rpc
		scrubbed.Message = rc.scrub(rpc.Message)
		return &RPCError{Key: key, Tool: tool, Err: &scrubbed}, true
	case ctx.Err() != nil:
		return nil, false
	}
	select {
	case c.probe <- err:
	default: // a probe is already pending; it answers for this call too
	}
	out := fmt.Errorf("broker: upstream %s: tools/call %s: %s: %w", key, tool, rc.scrub(err.Error()), errcode.ErrUpstreamUnavailable)
	b.log.Warn("broker: remote upstream call failed; checking the session", logkey.Upstream, key, logkey.Tool, tool, logkey.Err, out)
	return out, true
}

// drop asks c's session to end with why (the first reason wins).
func drop(c *conn, why error) {
	select {
	case c.drop <- why:
	default:
	}
}

// ping checks a session that may be gone.
func (b *Broker) ping(ctx context.Context, cs *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return cs.Ping(ctx, nil)
}

// scrubHandler is a slog.Handler that scrubs a remote connection's
// secrets from every message and attribute, whoever logs them (the
// broker, or the go-sdk client through ClientOptions.Logger).
type scrubHandler struct {
	h     slog.Handler
	scrub func(string) string
}

// Enabled implements slog.Handler.
func (s scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (s scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, s.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(s.attr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (s scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = s.attr(a)
	}
	return scrubHandler{h: s.h.WithAttrs(clean), scrub: s.scrub}
}

// WithGroup implements slog.Handler.
func (s scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{h: s.h.WithGroup(name), scrub: s.scrub}
}

func (s scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = s.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, s.scrub(err.Error()))
		}
		return slog.String(a.Key, s.scrub(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
