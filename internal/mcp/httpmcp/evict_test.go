package httpmcp

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// initSession opens a session the raw way (initialize, then initialized)
// and returns its id; the client then walks away without deleting it.
func (e *env) initSession(t *testing.T, token string) string {
	t.Helper()
	resp, body := e.raw(t, Path, initBody, auth(token))
	sid := resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, body)
	}
	if resp, body := e.raw(t, Path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, e.sessionHdr(token, sid)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", resp.StatusCode, body)
	}
	return sid
}

func (e *env) sessionHdr(token, sid string) map[string]string {
	hdr := auth(token)
	hdr[sessionIDHeader] = sid
	return hdr
}

// alive reports whether session sid still answers tools/list.
func (e *env) alive(t *testing.T, token, sid string) bool {
	t.Helper()
	resp, body := e.raw(t, Path, listBody, e.sessionHdr(token, sid))
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("tools/list on %s: %d %q", sid, resp.StatusCode, body)
	return false
}

// TestSessionCapEvictsLeastRecentlyUsedIdle: past the cap, a credential's
// new session ends its least recently used idle session; a session with a
// request in flight (an open GET stream) goes last; other credentials are
// untouched.
func TestSessionCapEvictsLeastRecentlyUsedIdle(t *testing.T) {
	e := newEnv(t, func(o *Options, _ *http.Server) { o.MaxSessionsPerCredential, o.RecentUse = 3, time.Nanosecond })
	e.auth.Add("tok-web", "web", "read")
	e.auth.Add("tok-ops", "ops", "read")
	other := e.initSession(t, "tok-ops")

	s1 := e.initSession(t, "tok-web")
	s2 := e.initSession(t, "tok-web")
	s3 := e.initSession(t, "tok-web")
	if !e.alive(t, "tok-web", s1) { // s1 is now the most recently used
		t.Fatal("s1 ended under the cap")
	}
	s4 := e.initSession(t, "tok-web")
	if e.alive(t, "tok-web", s2) {
		t.Fatal("s2, the least recently used, survived a fourth session over a cap of 3")
	}
	for _, sid := range []string{s1, s3, s4} {
		if !e.alive(t, "tok-web", sid) {
			t.Fatalf("session %s ended; only s2 should have", sid)
		}
	}

	// s3 holds a GET stream open: busy, so it outlives the idle ones even
	// though it is the least recently used once s1 and s4 are touched.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sessionIDHeader, s3)
	req.Header.Set("Authorization", "Bearer tok-web")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := httpClient(t, "").Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	e.alive(t, "tok-web", s1)
	e.alive(t, "tok-web", s4)
	s5 := e.initSession(t, "tok-web")
	s6 := e.initSession(t, "tok-web")
	for sid, want := range map[string]bool{s1: false, s4: false, s3: true, s5: true, s6: true} {
		if got := e.alive(t, "tok-web", sid); got != want {
			t.Errorf("session %s alive=%v, want %v", sid, got, want)
		}
	}
	if !e.alive(t, "tok-ops", other) {
		t.Fatal("another credential's session was evicted")
	}
	cancel()
	io.Copy(io.Discard, resp.Body)
}

// TestAbandonedSessionsStayAtTheCap: clients that open sessions and never
// delete them used to keep every one for 30 minutes (3,500 sessions took the
// daemon from 26 to 103 MB). Now the go-sdk sessions, the bindings and the
// session servers stay at the cap however many are abandoned.
func TestAbandonedSessionsStayAtTheCap(t *testing.T) {
	e := newEnv(t, func(o *Options, _ *http.Server) { o.RecentUse = time.Nanosecond }) // abandoned long ago
	const opened = 3 * DefaultMaxSessionsPerCredential
	var last string
	for i := range opened {
		last = e.initSession(t, operatorToken)
		if n := e.boundCount(); n > DefaultMaxSessionsPerCredential {
			t.Fatalf("after %d sessions: %d bindings", i+1, n)
		}
	}
	if n := e.sessions.liveSessions(); n != DefaultMaxSessionsPerCredential {
		t.Fatalf("%d go-sdk sessions alive after %d abandoned, want the cap %d", n, opened, DefaultMaxSessionsPerCredential)
	}
	if n := e.boundCount(); n != DefaultMaxSessionsPerCredential {
		t.Fatalf("%d bindings, want %d", n, DefaultMaxSessionsPerCredential)
	}
	if !e.alive(t, operatorToken, last) {
		t.Fatal("the newest session was evicted")
	}
}

// TestScenario_SessionsInUseAreNeverEvicted: 100 clients of one token each
// opening a session and calling on it (over the cap, sessions in active use
// were evicted: 31-69% of calls got 404). No call gets a 404; a
// session over the cap is refused at initialize with 503 and Retry-After.
func TestScenario_SessionsInUseAreNeverEvicted(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read")
	var notFound, refused, served atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16) // the test server's connection cap
	for range 100 {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			resp, body := e.raw(t, Path, initBody, auth("tok-web"))
			if resp.StatusCode == http.StatusServiceUnavailable {
				if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
					t.Errorf("503 with Retry-After %q", resp.Header.Get("Retry-After"))
				}
				refused.Add(1)
				return
			}
			sid := resp.Header.Get(sessionIDHeader)
			if resp.StatusCode != http.StatusOK || sid == "" {
				t.Errorf("initialize: %d %q", resp.StatusCode, body)
				return
			}
			e.raw(t, Path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, e.sessionHdr("tok-web", sid))
			for range 5 {
				resp, _ := e.raw(t, Path, listBody, e.sessionHdr("tok-web", sid))
				switch resp.StatusCode {
				case http.StatusOK:
					served.Add(1)
				case http.StatusNotFound:
					notFound.Add(1)
				default:
					t.Errorf("tools/list: %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls served, %d 404, %d sessions refused with 503", served.Load(), notFound.Load(), refused.Load())
	if notFound.Load() != 0 {
		t.Fatalf("%d calls on sessions in use got 404", notFound.Load())
	}
	if refused.Load() < 100-DefaultMaxSessionsPerCredential {
		t.Fatalf("%d refused: the cap was not kept", refused.Load())
	}
}
