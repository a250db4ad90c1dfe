package httpmcp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScenario_ASessionHTTPCallAnswersAsTheGoSDKPathDoes: the same calls
// over a 2025-11-25 session with the fast path on and off get the same
// answers and call log rows (the session's id in each), and with it on
// exactly the calls to listed upstream tools were forwarded as bytes.
func TestScenario_ASessionHTTPCallAnswersAsTheGoSDKPathDoes(t *testing.T) {
	sameAnswersOnBothPaths(t, func(e *env) (*mcp.ClientSession, error) { return e.connect(t, "tok-web") })
}

// TestScenario_ASessionThatCanBeAskedOrSetALogLevelKeepsTheGoSDKPath: a
// session whose client declared elicitation, and one that set a log level,
// have their calls served by the go-sdk (where an upstream's questions and
// log messages go with the call's stream); a plain session's calls take
// the fast path and are answered as application/json.
func TestScenario_ASessionThatCanBeAskedOrSetALogLevelKeepsTheGoSDKPath(t *testing.T) {
	e, b, _ := newFastEnv(t, true)
	call := func(cs *mcp.ClientSession) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("echo: %+v %v", res, err)
		}
	}
	plain := e.mustConnect(t, "tok-web")
	before := b.FastCalls()
	call(plain)
	if b.FastCalls()-before != 1 {
		t.Fatal("a plain session's call was not forwarded as bytes")
	}

	c := mcp.NewClient(&mcp.Implementation{Name: "asks", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	asks, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: httpClient(t, "tok-web"), MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer asks.Close()
	before = b.FastCalls()
	call(asks)
	if n := b.FastCalls() - before; n != 0 {
		t.Errorf("a session that can answer elicitation had %d calls forwarded as bytes", n)
	}

	leveled := e.mustConnect(t, "tok-web")
	if err := leveled.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	before = b.FastCalls()
	call(leveled)
	if n := b.FastCalls() - before; n != 0 {
		t.Errorf("a session that set a log level had %d calls forwarded as bytes", n)
	}

	// A raw POST shows the fast path's answer is one JSON body.
	sid := plain.ID()
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"raw"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocolVersionHeader, "2025-11-25")
	req.Header.Set(sessionIDHeader, sid)
	resp, err := httpClient(t, "tok-web").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("a raw session call: %d %s, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// A call that asks for a task is the go-sdk's (with its task kept).
	before = b.FastCalls()
	req, _ = http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","id":"x2","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"task"},"task":{"ttl":60000}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocolVersionHeader, "2025-11-25")
	req.Header.Set(sessionIDHeader, sid)
	if resp, err = httpClient(t, "tok-web").Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := b.FastCalls() - before; n != 0 || resp.Header.Get("Content-Type") == "application/json" {
		t.Errorf("a call asking for a task: %d forwarded as bytes, answered as %q", n, resp.Header.Get("Content-Type"))
	}
}

// TestScenario_ABusySessionOnTheFastPathOutlivesItsIdleTimeout: calls the
// fast path answers keep a session alive past the idle timeout (the
// go-sdk's own timer never sees them); once the session is left alone for
// the timeout, it ends.
func TestScenario_ABusySessionOnTheFastPathOutlivesItsIdleTimeout(t *testing.T) {
	const idle = 750 * time.Millisecond
	e, b, _ := newFastEnv(t, true, func(o *Options, _ *http.Server) { o.IdleTimeout = idle })
	cs := e.mustConnect(t, "tok-web")
	before := b.FastCalls()
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "busy"}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("a busy session's call failed: %+v %v", res, err)
		}
	}
	if b.FastCalls() == before {
		t.Fatal("no call took the fast path")
	}
	if e.boundCount() != 1 {
		t.Fatalf("%d bound sessions during the calls, want 1", e.boundCount())
	}
	for deadline := time.Now().Add(waitFor); e.boundCount() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the idle session never ended")
		}
		time.Sleep(10 * time.Millisecond) // the idle timer has no event to wait on
	}
}
