//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// freshClient is a browser-like client on a transport of its own, so each
// request it sends needs a connection the daemon has not accepted yet.
func freshClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:           jar,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 0},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dashSignIn signs c in with token and returns the status.
func dashSignIn(ctx context.Context, c *http.Client, base, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestScenario_DashboardStreamsPastTheirCapAreRefusedAndTheMCPDoorAnswers:
// a fault campaign opened 300 event streams from one read-only dashboard
// session; they took every connection of the HTTP listener, and agents'
// MCP calls and new sign-ins hung. Past the session's cap a stream is now
// refused at once (429), and meanwhile an MCP tools/call over a new
// connection and a new sign-in answer within a few seconds.
func TestScenario_DashboardStreamsPastTheirCapAreRefusedAndTheMCPDoorAnswers(t *testing.T) {
	const (
		streams  = 300 // more than the listener's 256 connections
		perSess  = 8   // the dashboard's per-session cap (docs/web.md)
		answerIn = 10 * time.Second
		promptly = 3 * time.Second
	)
	raiseNoFile(t, 4*streams+512)
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n")
	mcpURL := f.mcpURL()
	base := strings.TrimSuffix(mcpURL, "/mcp")
	op := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ro := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token", "--dashboard", "--grant", "read"))

	page := freshClient()
	ctx, cancel := context.WithTimeout(context.Background(), answerIn)
	st, err := dashSignIn(ctx, page, base, ro)
	cancel()
	if err != nil || st != http.StatusSeeOther {
		t.Fatalf("read-only sign-in = %d, %v", st, err)
	}
	u, _ := url.Parse(base)
	cookies := page.Jar.Cookies(u)

	// Every stream on its own connection, all from the one session.
	streamsCtx, stopStreams := context.WithCancel(context.Background())
	tr := &http.Transport{MaxIdleConnsPerHost: -1}
	defer tr.CloseIdleConnections()
	type answer struct {
		status int
		body   string
		err    error
	}
	answers := make(chan answer, streams)
	var open sync.WaitGroup
	defer func() {
		stopStreams() // a failure ends the streams before waiting for them
		open.Wait()
	}()
	for range streams {
		open.Add(1)
		go func() {
			defer open.Done()
			// The bound is on the answer; an open stream stays open.
			rctx, rcancel := context.WithCancel(streamsCtx)
			defer rcancel()
			unanswered := time.AfterFunc(answerIn, rcancel)
			req, _ := http.NewRequestWithContext(rctx, http.MethodGet, base+"/events", nil)
			for _, c := range cookies {
				req.AddCookie(c)
			}
			resp, err := tr.RoundTrip(req)
			unanswered.Stop()
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				answers <- answer{status: resp.StatusCode, body: string(b)}
				return
			}
			answers <- answer{status: resp.StatusCode}
			_, _ = io.Copy(io.Discard, resp.Body) // held open until the test ends
		}()
	}
	started := time.Now()
	ok, refused, unanswered := 0, 0, 0
	for range streams {
		a := <-answers
		switch {
		case a.err != nil:
			unanswered++
			t.Logf("an event stream got no answer within %v: %v", answerIn, a.err)
		case a.status == http.StatusOK:
			ok++
		case a.status == http.StatusTooManyRequests && strings.Contains(a.body, "too many open dashboard streams"):
			refused++
		default:
			t.Fatalf("an event stream was answered %d: %q", a.status, a.body)
		}
	}
	t.Logf("%d event streams answered in %v: %d open, %d refused, %d unanswered", streams, time.Since(started).Round(time.Millisecond), ok, refused, unanswered)

	// Meanwhile the MCP door: a new connection, initialize and a tools/call.
	began := time.Now()
	mctx, mcancel := context.WithTimeout(context.Background(), promptly)
	defer mcancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-beside-streams", Version: "1"}, nil)
	s, err := cl.Connect(mctx, &mcp.StreamableClientTransport{
		Endpoint:   mcpURL,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: op, Base: &http.Transport{}}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("MCP connect beside %d dashboard streams: %v after %v", ok, err, time.Since(began))
	}
	defer s.Close()
	res, err := s.CallTool(mctx, &mcp.CallToolParams{Name: "harness_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call harness_list beside the streams: %v, %+v after %v", err, res, time.Since(began))
	}
	t.Logf("MCP initialize and tools/call on a new connection: %v", time.Since(began).Round(time.Millisecond))

	// And a new sign-in (the operator's).
	began = time.Now()
	sctx, scancel := context.WithTimeout(context.Background(), promptly)
	defer scancel()
	if st, err := dashSignIn(sctx, freshClient(), base, op); err != nil || st != http.StatusSeeOther {
		t.Fatalf("operator sign-in beside the streams = %d, %v after %v", st, err, time.Since(began))
	}
	t.Logf("a new sign-in: %v", time.Since(began).Round(time.Millisecond))

	// The streams past the session's cap were refused at once.
	if ok != perSess || refused != streams-perSess {
		t.Fatalf("%d streams open and %d refused, want %d and %d", ok, refused, perSess, streams-perSess)
	}

	// A terminal of the same session counts against the same cap.
	wctx, wcancel := context.WithTimeout(context.Background(), promptly)
	_, resp, err := websocket.Dial(wctx, "ws"+strings.TrimPrefix(base, "http")+"/h/any/attach", &websocket.DialOptions{HTTPClient: freshClientWith(page.Jar)})
	wcancel()
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a terminal past the session's cap: %v, %+v; want 429", err, resp)
	}
}

// freshClientWith is freshClient sharing jar (the session's cookie).
func freshClientWith(jar http.CookieJar) *http.Client {
	c := freshClient()
	c.Jar = jar
	return c
}
