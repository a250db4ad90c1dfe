package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

const remoteToken = "remote-b3arer-7f1e2d"

// lockedBuffer collects a broker's log for secret greps.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// remoteFixture is a broker with one remote upstream "r" (unit mcp.r) and
// a Go Streamable HTTP server to point it at.
type remoteFixture struct {
	t       *testing.T
	b       *Broker
	srv     *demoupstream.HTTPServer
	log     *lockedBuffer
	starts  chan startReport
	secrets []string
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	f := &remoteFixture{t: t, log: &lockedBuffer{}, starts: make(chan startReport, 16),
		srv: demoupstream.NewHTTPServer("remote-demo")}
	f.srv.RequireBearer(remoteToken)
	if err := f.srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Stop)
	log := slog.New(slog.NewTextHandler(teeWriter{f.log, testWriter{t}}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.b = New(log, Options{ConnectTimeout: 5 * time.Second})
	f.b.Configure(map[string]Upstream{"mcp.r": {Key: "r"}})
	t.Cleanup(f.b.Close)
	return f
}

type teeWriter struct {
	a *lockedBuffer
	b testWriter
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.a.Write(p)
	return w.b.Write(p)
}

// connect hands the broker run with token as the bearer; the returned
// channel gets the run's end.
func (f *remoteFixture) connect(ctx context.Context, run uint64, token string) <-chan error {
	ended := make(chan error, 1)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	f.secrets = append(f.secrets, token)
	f.b.Serve(ctx, api.UpstreamRun{Unit: "mcp.r", Run: run,
		Link:    endpoint.Target{URL: f.srv.URL(), Header: h, Secrets: []string{"Bearer " + token, token}},
		Started: func(err error) { f.starts <- startReport{"mcp.r", run, err} },
		Ended:   func(err error) { ended <- err }})
	return ended
}

func (f *remoteFixture) started() startReport {
	f.t.Helper()
	select {
	case r := <-f.starts:
		return r
	case <-time.After(15 * time.Second):
		f.t.Fatal("no start report")
		return startReport{}
	}
}

func waitEnded(t *testing.T, ended <-chan error) error {
	t.Helper()
	select {
	case err := <-ended:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("the connection never reported its end")
		return nil
	}
}

// noSecret fails if a secret shows in any of texts or in the broker log.
func (f *remoteFixture) noSecret(texts ...string) {
	f.t.Helper()
	texts = append(texts, f.log.String())
	for _, s := range f.secrets {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				f.t.Fatalf("a header value shows: %q in %q", s, txt)
			}
		}
	}
}

// TestScenario_RemoteUpstreamCallsProgressCancellation: the same broker
// semantics over Streamable HTTP as over stdio: namespaced tools, calls,
// progress under the caller's token, cancellation reaching the server,
// tools/list_changed, and the bearer header on every request.
func TestScenario_RemoteUpstreamCallsProgressCancellation(t *testing.T) {
	f := newRemoteFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	ended := f.connect(ctx, 1, remoteToken)
	if r := f.started(); r.err != nil || r.run != 1 {
		t.Fatalf("start %+v", r)
	}
	waitFor(t, f.b, "connected", connected(f.b, "mcp.r"))
	if got := text(t, call(t, f.b, "", "r__echo", map[string]any{"text": "over http"})); got != "over http" {
		t.Fatalf("echo %q", got)
	}

	var mu sync.Mutex
	var got []float64
	notify := func(_ context.Context, p *mcp.ProgressNotificationParams) error {
		mu.Lock()
		defer mu.Unlock()
		if p.ProgressToken != "caller-tok" {
			t.Errorf("progress token %v", p.ProgressToken)
		}
		got = append(got, p.Progress)
		return nil
	}
	res, err := f.b.Call(context.Background(), "", "r__progress", args(t, map[string]any{"steps": 3}), nil, "caller-tok", notify)
	if err != nil || text(t, res) != "done" {
		t.Fatalf("progress: %v %+v", err, res)
	}
	mu.Lock()
	if len(got) != 3 || got[2] != 3 {
		t.Fatalf("progress seen %v", got)
	}
	mu.Unlock()

	cctx, ccancel := context.WithCancel(context.Background())
	startedSlow := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := f.b.Call(cctx, "", "r__slow", args(t, map[string]any{"ms": 60000}), nil, "slow-tok",
			func(context.Context, *mcp.ProgressNotificationParams) error { startedSlow <- struct{}{}; return nil })
		done <- err
	}()
	<-startedSlow // the handler runs upstream
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if got := text(t, call(t, f.b, "", "r__cancelled", map[string]any{"at_least": 1})); got != "1" {
		t.Fatalf("cancellations seen upstream: %q", got)
	}

	call(t, f.b, "", "r__add_tool", map[string]any{"name": "late"})
	waitFor(t, f.b, "r__late listed", func() bool {
		known, tool := f.b.Known("", "r__late")
		return known && tool
	})
	if f.srv.Authorized() == 0 {
		t.Fatal("the server saw no request with the bearer token")
	}

	cancel()
	if err := waitEnded(t, ended); err != nil {
		t.Fatalf("ended by its context: %v", err)
	}
	f.noSecret()
}

// TestScenario_RemoteUpstreamUnauthorized: a refused credential is said
// as such, to the supervisor (a failed start) and in the status, without
// the credential.
func TestScenario_RemoteUpstreamUnauthorized(t *testing.T) {
	f := newRemoteFixture(t)
	ended := f.connect(context.Background(), 1, "wrong-t0ken-91ab")
	r := f.started()
	want := "HTTP 401 Unauthorized from " + f.srv.URL() + ": check the headers of [mcp.r]"
	if r.err == nil || !strings.Contains(r.err.Error(), want) {
		t.Fatalf("start report %v, want %q", r.err, want)
	}
	if err := waitEnded(t, ended); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ended with %v", err)
	}
	st := f.b.Status()[0]
	if st.Connected || !strings.Contains(st.LastError, want) {
		t.Fatalf("status %+v", st)
	}
	_, err := f.b.Call(context.Background(), "", "r__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Fatalf("call to a refused upstream: %v", err)
	}
	f.noSecret(r.err.Error(), st.LastError, err.Error())
}

// TestScenario_RemoteUpstreamServerGoneAndBack: a stopped server fails
// calls with upstream_unavailable and ends the run (the supervisor then
// reconnects); a connect while it is down fails; once it is back a new
// run serves calls.
func TestScenario_RemoteUpstreamServerGoneAndBack(t *testing.T) {
	f := newRemoteFixture(t)
	ended := f.connect(context.Background(), 1, remoteToken)
	if r := f.started(); r.err != nil {
		t.Fatal(r.err)
	}
	call(t, f.b, "", "r__echo", map[string]any{"text": "up"})
	f.srv.Stop()
	_, err := f.b.Call(context.Background(), "", "r__echo", args(t, map[string]any{"text": "down"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) || !strings.Contains(err.Error(), "upstream r") {
		t.Fatalf("call while the server is gone: %v", err)
	}
	if err := waitEnded(t, ended); err == nil {
		t.Fatal("a session whose server is gone ended without a reason")
	}
	if st := f.b.Status()[0]; st.Connected || st.LastError == "" {
		t.Fatalf("status after the loss: %+v", st)
	}
	f.b.Detach("mcp.r", 1, time.Now().Add(time.Second), "connection lost")

	ended = f.connect(context.Background(), 2, remoteToken)
	if r := f.started(); r.err == nil || r.run != 2 {
		t.Fatalf("connect while down: %+v", r)
	}
	waitEnded(t, ended)

	if err := f.srv.Start(""); err != nil {
		t.Fatal(err)
	}
	ended = f.connect(context.Background(), 3, remoteToken)
	if r := f.started(); r.err != nil || r.run != 3 {
		t.Fatalf("connect after the restart: %+v", r)
	}
	if got := text(t, call(t, f.b, "", "r__echo", map[string]any{"text": "back"})); got != "back" {
		t.Fatalf("echo after the restart %q", got)
	}
	f.noSecret()
}

// TestScenario_RemoteUpstreamCredentialRevoked: a 401 in the middle of a
// session fails the call as an outage naming the status, and ends the
// session so the supervisor reconnects with the env_file read again.
func TestScenario_RemoteUpstreamCredentialRevoked(t *testing.T) {
	f := newRemoteFixture(t)
	ended := f.connect(context.Background(), 1, remoteToken)
	if r := f.started(); r.err != nil {
		t.Fatal(r.err)
	}
	f.srv.Refuse(true)
	_, err := f.b.Call(context.Background(), "", "r__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) || !strings.Contains(err.Error(), "HTTP 401 Unauthorized from "+f.srv.URL()) {
		t.Fatalf("call after revocation: %v", err)
	}
	end := waitEnded(t, ended)
	if end == nil || !strings.Contains(end.Error(), "HTTP 401 Unauthorized") {
		t.Fatalf("session end: %v", end)
	}
	f.noSecret(err.Error(), end.Error())
}

// Over HTTP too, every progress notification the server sent before its
// result reaches the caller before Call returns, also when the result
// overtakes them in the client (no_sync: no ping orders them).
func TestRemoteProgressBeforeTheResultIsDelivered(t *testing.T) {
	f := newRemoteFixture(t)
	f.connect(context.Background(), 1, remoteToken)
	if r := f.started(); r.err != nil {
		t.Fatal(r.err)
	}
	for i := range 20 {
		var n int
		var mu sync.Mutex
		notify := func(context.Context, *mcp.ProgressNotificationParams) error {
			mu.Lock()
			n++
			mu.Unlock()
			return nil
		}
		res, err := f.b.Call(context.Background(), "", "r__progress", args(t, map[string]any{"steps": 25, "no_sync": true}), nil, i, notify)
		if err != nil || text(t, res) != "done" {
			t.Fatalf("progress: %v", err)
		}
		mu.Lock()
		if n != 25 {
			t.Fatalf("round %d: %d of 25 notifications before the result", i, n)
		}
		mu.Unlock()
	}
}

func TestSSECounterCountsProgressEvents(t *testing.T) {
	stream := "id: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"a\"}}\r\n\r\n" +
		": comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"b\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"note\":\"notifications/progress\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
	var got []string
	c := &sseCounter{ReadCloser: io.NopCloser(strings.NewReader(stream)), count: func(p []byte) { got = append(got, string(p)) }}
	// Read in odd-sized pieces: lines and events split across reads.
	buf := make([]byte, 7)
	var out bytes.Buffer
	for {
		n, err := c.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if out.String() != stream {
		t.Fatal("the stream was changed on its way through")
	}
	if len(got) != 2 || !strings.Contains(got[0], `"a"`) || !strings.Contains(got[1], `"b"`) {
		t.Fatalf("counted %q", got)
	}
}

// TestScenario_RemoteResultsHideTheCredential: a server that echoes the
// request's Authorization header in its result (text and structured
// content) hands the caller "(hidden)" instead of the token.
func TestScenario_RemoteResultsHideTheCredential(t *testing.T) {
	f := newRemoteFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.connect(ctx, 1, remoteToken)
	if r := f.started(); r.err != nil {
		t.Fatalf("start %+v", r)
	}
	waitFor(t, f.b, "connected", connected(f.b, "mcp.r"))
	res := call(t, f.b, "", "r__whoami", map[string]any{})
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "you sent Authorization: (hidden)" {
		t.Fatalf("whoami text %q", got)
	}
	if !strings.Contains(string(raw), `"structuredContent":{"authorization":"(hidden)"}`) {
		t.Fatalf("whoami structured content: %s", raw)
	}
	f.noSecret(string(raw))
	if f.srv.Authorized() == 0 {
		t.Fatal("the server saw no request with the token")
	}
}

// TestRemoteScrubResultAndProgress: secrets are hidden however JSON
// escapes them, a result without one comes back as it was, and progress
// messages are scrubbed too.
func TestRemoteScrubResultAndProgress(t *testing.T) {
	const odd = `tok<en>"&\x`
	rc := newRemoteConn("r", "http://127.0.0.1/mcp", nil, []string{odd, "plain-secret"}, nil)
	in := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a " + odd + " b plain-secret"}},
		StructuredContent: map[string]any{"k": odd}}
	out, err := rc.filterResult("r", in)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(out)
	if strings.Contains(string(raw), "plain-secret") || strings.Contains(string(raw), "en>") || strings.Contains(string(raw), `en\u003e`) {
		t.Fatalf("a secret survived: %s", raw)
	}
	if got := out.Content[0].(*mcp.TextContent).Text; got != "a (hidden) b (hidden)" {
		t.Fatalf("text %q", got)
	}
	clean := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing to hide"}}}
	if same, err := rc.filterResult("r", clean); err != nil || same != clean {
		t.Fatalf("a clean result was rebuilt: %v %p %p", err, same, clean)
	}
	var msg string
	notify := rc.scrubProgress(func(_ context.Context, p *mcp.ProgressNotificationParams) error { msg = p.Message; return nil })
	p := &mcp.ProgressNotificationParams{Message: "step with plain-secret"}
	if err := notify(context.Background(), p); err != nil || msg != "step with (hidden)" || p.Message != "step with plain-secret" {
		t.Fatalf("progress message %q (the sender's copy %q)", msg, p.Message)
	}
}
