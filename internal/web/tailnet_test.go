package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// loginHeader stands in for the tailnet node in these tests: the login
// it would name for the request (internal/tailnet asks WhoIs).
const loginHeader = "X-Test-Tailnet-Login"

// tailnetRig is the dashboard behind a stand-in tailnet node, with
// ann@example.com granted read,input and cat@example.com read.
func tailnetRig(t *testing.T) *rig {
	t.Helper()
	return tailnetRigWith(t, newLoginTable(), slog.New(slog.DiscardHandler))
}

// loginTable is [web.users] as a reload changes it.
type loginTable struct {
	mu    sync.Mutex
	users map[string][]string
}

func newLoginTable() *loginTable {
	return &loginTable{users: map[string][]string{"ann@example.com": {"read", "input"}, "cat@example.com": {"read"}}}
}

// set gives login grant, or takes its grant away when grant is nil.
func (l *loginTable) set(login string, grant []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if grant == nil {
		delete(l.users, login)
		return
	}
	l.users[login] = grant
}

func (l *loginTable) grant(login string) (api.Grant, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.users[login]
	if !ok {
		return api.Grant{}, false
	}
	g, err := api.ParseGrant(e)
	return g, err == nil
}

// tailnetRigWith is tailnetRig with users as [web.users] and log as the
// dashboard's log.
func tailnetRigWith(t *testing.T, users *loginTable, log *slog.Logger) *rig {
	t.Helper()
	r := &rig{t: t, b: newFake(), state: t.TempDir(), now: time.Now()}
	srv, err := New(Options{Backend: r.b, StateDir: r.state, SessionTTL: time.Hour, Logger: log, Now: r.clock,
		TailnetUsers: users.grant,
		TailnetHosts: func() []string { return []string{"harness.tail.example"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if login := req.Header.Get(loginHeader); login != "" {
			req = WithTailnetLogin(req, login)
		}
		srv.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		r.ts.CloseClientConnections()
		r.ts.Close()
		srv.Close()
	})
	return r
}

// as is a browser on the tailnet device of login.
type loginTransport struct{ login string }

func (l loginTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(loginHeader, l.login)
	return http.DefaultTransport.RoundTrip(req)
}

func (r *rig) as(login string) *http.Client {
	c := r.client()
	c.Transport = loginTransport{login}
	return c
}

// TestScenario_TailnetLoginsAreTheirGrantAndNoOneElse: a granted login
// reads the fleet with no sign-in and answers a prompt, the audit naming
// tailnet:LOGIN; a login without a grant is 403 on every page, told
// nothing of whom the page lets in, though an action link still answers
// it; a login's session cookie does not carry another login's grant, nor
// sign anyone in off the tailnet.
func TestScenario_TailnetLoginsAreTheirGrantAndNoOneElse(t *testing.T) {
	r := tailnetRig(t)
	ann := r.as("ann@example.com")
	st, body, csrf := r.page(ann, "/")
	if st != http.StatusOK || !strings.Contains(body, "Allow Bash?") || csrf == "" {
		t.Fatalf("the fleet for ann: %d\n%s", st, body)
	}
	if st, body := r.post(ann, "/h/w/answer", url.Values{"choice": {"Yes"}, csrfField: {csrf}}, nil); st >= 400 {
		t.Fatalf("ann answers: %d %s", st, body)
	}
	r.b.mu.Lock()
	last := r.b.callers[len(r.b.callers)-1]
	r.b.mu.Unlock()
	if !r.b.called(api.OpAnswer) || last.Door != api.DoorTailnet || last.Actor != "tailnet:ann@example.com" {
		t.Fatalf("the answer's caller: %+v", last)
	}

	bob := r.as("bob@example.com")
	for _, path := range []string{"/", "/h/w", "/events", "/login", "/calls"} {
		st, body, _ := r.page(bob, path)
		if st != http.StatusForbidden || strings.Contains(body, "ann@") || strings.Contains(body, "cat@") || strings.Contains(body, "Allow Bash?") {
			t.Fatalf("GET %s for bob: %d\n%s", path, st, body)
		}
	}
	if st, _ := r.post(bob, "/h/w/answer", url.Values{"choice": {"No"}}, nil); st != http.StatusForbidden {
		t.Fatalf("bob answers: %d", st)
	}
	if st, body, _ := r.page(bob, "/a/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); st == http.StatusForbidden {
		t.Fatalf("an action link for bob: %d %s (the link alone is the permission)", st, body)
	}

	// cat (read) with ann's cookie: a session of cat's own, whose CSRF
	// token is not ann's and whose grant has no input.
	cat := r.as("cat@example.com")
	cat.Jar = ann.Jar
	if st, _ := r.post(cat, "/h/w/answer", url.Values{"choice": {"No"}, csrfField: {csrf}}, nil); st != http.StatusForbidden {
		t.Fatalf("cat with ann's cookie and CSRF token answers: %d", st)
	}
	_, _, catCSRF := r.page(cat, "/")
	if st, _ := r.post(cat, "/h/w/answer", url.Values{"choice": {"No"}, csrfField: {catCSRF}}, nil); st != http.StatusForbidden {
		t.Fatalf("cat (read) answers: %d", st)
	}

	// Off the tailnet, a tailnet session's cookie signs nobody in.
	off := r.client()
	off.Jar = ann.Jar
	if st, _, _ := r.page(off, "/"); st != http.StatusSeeOther {
		t.Fatalf("a tailnet cookie off the tailnet: %d, want the sign-in redirect", st)
	}
	// The node's names pass the Host check.
	req, _ := http.NewRequest(http.MethodGet, r.ts.URL+"/", nil)
	req.Host = "harness.tail.example"
	req.Header.Set(loginHeader, "ann@example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the tailnet name as Host: %d", resp.StatusCode)
	}
}
