package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend answers list/describe/runs/calls/start/stop/send and
// records what was called; its viewers are fakeViewers.
type fakeBackend struct {
	mu      sync.Mutex
	calls   []string
	events  chan api.Event
	grant   api.Grant
	viewer  *fakeViewer
	attachs []api.AttachArgs
	many    int           // when set, list answers this many running sleepers
	fresh   bool          // when set, each attach gets a viewer of its own
	viewers []*fakeViewer // of each attach, when fresh
	callers []api.Caller  // of each call, in order
}

func newFake() *fakeBackend {
	g, _ := api.ParseGrant([]string{"read", "write", "input"})
	return &fakeBackend{events: make(chan api.Event, 16), grant: g}
}

func (b *fakeBackend) Call(_ context.Context, c api.Caller, op string, args json.RawMessage) (any, error) {
	b.mu.Lock()
	b.calls = append(b.calls, op+" "+string(args))
	b.callers = append(b.callers, c)
	b.mu.Unlock()
	if c.Kind != api.Dashboard {
		return nil, errors.New("caller is not the dashboard")
	}
	switch op {
	case api.OpList:
		if b.many > 0 {
			rows := make([]map[string]any, b.many)
			for i := range rows {
				rows[i] = map[string]any{"name": fmt.Sprintf("h%04d", i), "state": "running", "activity": "quiet"}
			}
			return rows, nil
		}
		return []map[string]any{
			{"name": "a", "state": "stopped", "project": "p", "restart_count": 2, "hold": map[string]any{"reason": "hours", "note": "outside 09:00-18:00"}},
			{"name": "w", "state": "running", "agent_state": "waiting", "prompt": "Allow Bash?", "choices": []string{"Yes", "No"}},
		}, nil
	case api.OpDescribe:
		var a api.NameArg
		_ = json.Unmarshal(args, &a)
		if a.Name == "nope" {
			return nil, errcode.Errorf(errcode.UnknownHarness, "harness %q", a.Name)
		}
		agent := "claude-code"
		if a.Name == "plain" {
			agent = "generic"
		}
		return map[string]any{"name": a.Name, "state": "running", "agent": agent, "agent_state": "waiting", "prompt": "Allow Bash?",
			"choices": []map[string]string{{"key": "1", "label": "Yes"}, {"key": "2", "label": "No"}}, "suggested": "No"}, nil
	case api.OpTurns:
		var a api.TurnsArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, errcode.Errorf(errcode.InvalidArgument, "turns: %v", err)
		}
		if a.Run == 9 {
			return nil, errcode.Errorf(errcode.InvalidArgument, "%s has no run 9", a.Name)
		}
		run := a.Run
		if run == 0 {
			run = 2
		}
		cost := 0.0123
		return api.TurnsResult{Name: a.Name, RunID: run, Agent: "claude-code", SessionID: "s-1", Model: "claude-opus-5",
			Tokens: api.Tokens{Input: 131, Output: 32}, CostUSD: &cost, Turns: []api.TurnInfo{
				{Role: "user", Text: fmt.Sprintf("Remember [masked] (run %d)", run)},
				{Role: "assistant", Text: "<b>Made</b> it.", Tokens: &api.Tokens{Input: 10, Output: 5},
					ToolCalls: []api.ToolCallInfo{{Name: "Bash", Input: `{"command":"touch f"}`, Outcome: "ok"}}},
			}}, nil
	case api.OpRuns:
		return []api.Run{{ID: 1, Harness: "w", Cause: "start"}, {ID: 2, Harness: "w", Cause: "restart"}}, nil
	case api.OpCalls:
		return api.CallsResult{}, nil
	case api.OpStart, api.OpStop, api.OpSend, api.OpAnswer, api.OpReview:
		return map[string]any{"ok": true, "status": "queued"}, nil
	case api.OpDiff:
		return fakeDiff(args)
	}
	return nil, errcode.Errorf(errcode.InvalidArgument, "unknown operation %s", op)
}

func (b *fakeBackend) called(prefix string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func (b *fakeBackend) Attach(_ context.Context, _ api.Caller, a api.AttachArgs) (Viewer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attachs = append(b.attachs, a)
	if b.fresh {
		b.viewer = newFakeViewer()
		b.viewers = append(b.viewers, b.viewer)
	}
	if b.viewer == nil {
		b.viewer = newFakeViewer()
	}
	return b.viewer, nil
}

func (b *fakeBackend) attached() ([]api.AttachArgs, *fakeViewer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.AttachArgs(nil), b.attachs...), b.viewer
}

func (b *fakeBackend) Subscribe() (<-chan api.Event, func()) { return b.events, func() {} }
func (b *fakeBackend) OperatorGrant() api.Grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grant
}

// fakeViewer sends its attached notice, then whatever out carries; input
// and resizes are recorded.
type fakeViewer struct {
	out    chan []byte
	mu     sync.Mutex
	input  bytes.Buffer
	sized  int
	closed chan struct{}
	once   sync.Once
	sent   bool
}

func newFakeViewer() *fakeViewer {
	return &fakeViewer{out: make(chan []byte, 1024), closed: make(chan struct{})}
}

func (v *fakeViewer) Next(ctx context.Context) ([]byte, *api.AttachEvent, error) {
	v.mu.Lock()
	first := !v.sent
	v.sent = true
	v.mu.Unlock()
	if first {
		return nil, &api.AttachEvent{Kind: api.AttachAttached, Cols: 80, Rows: 24}, nil
	}
	select {
	case p := <-v.out:
		return p, nil, nil
	case <-v.closed:
		return nil, nil, io.EOF
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func (v *fakeViewer) Input(_ context.Context, p []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.input.Write(p)
	return nil
}

func (v *fakeViewer) Resize(context.Context, int, int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sized++
	return nil
}

func (v *fakeViewer) Close() { v.once.Do(func() { close(v.closed) }) }

func (v *fakeViewer) typed() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.input.String()
}

type rig struct {
	t     *testing.T
	b     *fakeBackend
	srv   *Server
	ts    *httptest.Server
	state string
	now   time.Time
	mu    sync.Mutex
}

const operatorToken = "op-secret-token"

func newRig(t *testing.T) *rig { return newRigWith(t, nil) }

// newRigWith is newRig with tune applied to the Options.
func newRigWith(t *testing.T, tune func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, b: newFake(), state: t.TempDir(), now: time.Now()}
	opt := Options{Backend: r.b, OperatorToken: operatorToken, StateDir: r.state, SessionTTL: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Now: r.clock}
	if tune != nil {
		tune(&opt)
	}
	srv, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.ts = httptest.NewServer(srv)
	t.Cleanup(func() {
		r.ts.CloseClientConnections()
		r.ts.Close()
		srv.Close()
	})
	return r
}

func (r *rig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *rig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

// client is a browser-like client: a cookie jar, no redirects followed.
func (r *rig) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (r *rig) signIn(c *http.Client, token string) int {
	r.t.Helper()
	resp, err := c.PostForm(r.ts.URL+"/login", url.Values{"token": {token}})
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var csrfRe = regexp.MustCompile(`name="csrf-token" content="([0-9a-f]+)"`)

// page GETs path and returns the status, body and the page's CSRF token.
func (r *rig) page(c *http.Client, path string) (int, string, string) {
	r.t.Helper()
	resp, err := c.Get(r.ts.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := csrfRe.FindStringSubmatch(string(body))
	tok := ""
	if m != nil {
		tok = m[1]
	}
	return resp.StatusCode, string(body), tok
}

func (r *rig) post(c *http.Client, path string, form url.Values, hdr map[string]string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestScenario_SignInSetsAStrictCookieAndShowsTheFleetWaitingFirst(t *testing.T) {
	r := newRig(t)
	c := r.client()
	if st, _, _ := r.page(c, "/"); st != http.StatusSeeOther {
		t.Fatalf("GET / signed out = %d, want a redirect to /login", st)
	}
	if st := r.signIn(c, "wrong"); st != http.StatusUnauthorized {
		t.Fatalf("sign in with a wrong token = %d", st)
	}
	resp, err := c.PostForm(r.ts.URL+"/login", url.Values{"token": {operatorToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || strings.Contains(ck[0].Value, operatorToken) {
		t.Fatalf("cookies = %+v", ck)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline'; img") && strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Fatalf("CSP = %q", csp)
	}
	st, body, _ := r.page(c, "/")
	if st != 200 {
		t.Fatalf("GET / = %d", st)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "onclick=") {
		t.Fatal("the page carries inline script")
	}
	iw, ia := strings.Index(body, `data-name="w"`), strings.Index(body, `data-name="a"`)
	if iw < 0 || ia < 0 || iw > ia {
		t.Fatalf("the waiting agent is not listed first (w at %d, a at %d)", iw, ia)
	}
	if !strings.Contains(body, "Allow Bash?") || !strings.Contains(body, "project p") || !strings.Contains(body, "⏸ hours") {
		t.Fatal("the fleet lacks the waiting prompt, the project group or the hold")
	}
	st, body, _ = r.page(c, "/h/w")
	if st != 200 || !strings.Contains(body, `data-choice="1"`) || !strings.Contains(body, `data-choice="2"`) {
		t.Fatalf("harness page = %d, want one button per choice:\n%s", st, body)
	}
	if !strings.Contains(body, `class="choice suggested" title="suggested: it lets the agent go on" data-choice="2"`) || strings.Count(body, "suggested:") != 1 {
		t.Fatalf("the choice that goes on (the second) is not the one marked:\n%s", body)
	}
	if st, body, _ := r.page(c, "/h/nope"); st != http.StatusNotFound || !strings.Contains(body, "unknown_harness") {
		t.Fatalf("unknown harness = %d %q", st, body)
	}
}

func TestScenario_TokenInTheURLIsRefused(t *testing.T) {
	r := newRig(t)
	resp, err := r.client().PostForm(r.ts.URL+"/login?token="+operatorToken, url.Values{"token": {operatorToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("token in the URL = %d, want 400", resp.StatusCode)
	}
}

func TestScenario_PostsNeedTheCSRFTokenAndALoopbackOrigin(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	_, _, csrf := r.page(c, "/")
	if csrf == "" {
		t.Fatal("no CSRF token in the page")
	}
	if st, _ := r.post(c, "/h/a/stop", nil, nil); st != http.StatusForbidden {
		t.Fatalf("POST without CSRF = %d", st)
	}
	if st, _ := r.post(c, "/h/a/stop", url.Values{"csrf": {"bad"}}, nil); st != http.StatusForbidden {
		t.Fatalf("POST with a wrong CSRF = %d", st)
	}
	if r.b.called(api.OpStop) {
		t.Fatal("a refused POST reached the op")
	}
	if st, _ := r.post(c, "/h/a/stop", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "https://evil.example"}); st != http.StatusForbidden {
		t.Fatalf("POST from a foreign origin = %d", st)
	}
	if st, _ := r.post(c, "/h/a/stop", url.Values{"csrf": {csrf}, "back": {"//evil.example/"}}, nil); st != http.StatusSeeOther {
		t.Fatalf("POST with CSRF = %d", st)
	}
	if !r.b.called(api.OpStop + ` {"name":"a"}`) {
		t.Fatal("the stop did not reach the op")
	}
	req, _ := http.NewRequest(http.MethodGet, r.ts.URL+"/", nil)
	req.Host = "evil.example"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign Host = %d", resp.StatusCode)
	}
	if st, body := r.post(c, "/h/a/explode", url.Values{"csrf": {csrf}}, nil); st != http.StatusNotFound || strings.Contains(body, "goroutine") {
		t.Fatalf("unknown action = %d %q", st, body)
	}
}

func TestScenario_ReadOnlyDashboardTokenIsRefusedActionsAndKeys(t *testing.T) {
	r := newRig(t)
	tok, meta, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := r.client()
	if st := r.signIn(c, tok); st != http.StatusSeeOther {
		t.Fatalf("sign in with a dashboard token = %d", st)
	}
	_, body, csrf := r.page(c, "/h/w")
	if !strings.Contains(body, "disabled") || strings.Contains(body, `class="act"`) {
		t.Fatal("a read-only page shows live action buttons")
	}
	for _, p := range []string{"/h/w/answer", "/h/w/send", "/h/w/stop", "/h/w/start"} {
		if st, _ := r.post(c, p, url.Values{"csrf": {csrf}, "choice": {"1"}, "text": {"x"}}, nil); st != http.StatusForbidden {
			t.Errorf("read-only POST %s = %d", p, st)
		}
	}
	if r.b.called(api.OpAnswer) || r.b.called(api.OpSend) || r.b.called(api.OpStop) {
		t.Fatal("a refused action reached the op")
	}

	// The terminal: read-only viewer, keys refused with a notice.
	ws := r.dialAttach(c, "w", csrf)
	readNotice(t, ws, api.AttachAttached)
	if err := ws.Write(context.Background(), websocket.MessageBinary, []byte("rm -rf /\r")); err != nil {
		t.Fatal(err)
	}
	if n := readNotice(t, ws, api.AttachNotice); !strings.Contains(n.Message, "read-only") {
		t.Fatalf("notice = %+v", n)
	}
	as, v := r.b.attached()
	if typed := v.typed(); typed != "" {
		t.Fatalf("a read-only viewer typed %q", typed)
	}
	if a := as[0]; !a.ReadOnly || !a.Masked || a.Cols != 0 {
		t.Fatalf("attach args = %+v, want read-only and masked without a size", a)
	}
	ws.Close(websocket.StatusNormalClosure, "")

	// Revoked: the session ends at its next request.
	if _, err := dashtoken.Revoke(r.state, meta.ID); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := r.page(c, "/"); st != http.StatusSeeOther {
		t.Fatalf("GET / after revoke = %d, want a redirect to sign in", st)
	}
}

func TestScenario_SessionsExpireAndSignOutEnds(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	if st, _, _ := r.page(c, "/"); st != 200 {
		t.Fatalf("GET / = %d", st)
	}
	r.advance(2 * time.Hour)
	if st, _, _ := r.page(c, "/"); st != http.StatusSeeOther {
		t.Fatalf("GET / after the TTL = %d", st)
	}
	r.signIn(c, operatorToken)
	_, _, csrf := r.page(c, "/")
	if st, _ := r.post(c, "/logout", nil, nil); st != http.StatusForbidden {
		t.Fatalf("sign-out without CSRF = %d", st)
	}
	if st, _ := r.post(c, "/logout", url.Values{"csrf": {csrf}}, nil); st != http.StatusSeeOther {
		t.Fatalf("sign-out = %d", st)
	}
	if st, _, _ := r.page(c, "/"); st != http.StatusSeeOther {
		t.Fatalf("GET / after sign-out = %d", st)
	}
}

// TestScenario_AHarnessPageShowsItsAgentsTurns: an agent harness's page
// shows the turns op's answer as turns (who, text escaped, tool calls
// with their outcome, tokens, cost), of the current run or of the run
// chosen with ?run=N; the section alone is a fragment; the live part and
// a harness without an agent transcript never read one.
func TestScenario_AHarnessPageShowsItsAgentsTurns(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	st, body, _ := r.page(c, "/h/w")
	for _, want := range []string{`id="turns"`, `data-follow="1"`, "Turns · run 2", "Remember [masked] (run 2)", "&lt;b&gt;Made&lt;/b&gt; it.",
		`<span class="badge tool-name">Bash</span>`, `out-ok`, "touch f", "$0.0123", "tokens in 131, out 32", `href="/h/w?run=`} {
		if st != 200 || !strings.Contains(body, want) {
			t.Fatalf("harness page = %d, lacks %q:\n%s", st, want, body)
		}
	}
	if !r.b.called(`turns {"name":"w","limit":50}`) {
		t.Fatalf("the page did not ask for the current run's turns: %v", r.b.calls)
	}
	st, body, _ = r.page(c, "/h/w?run=1")
	if st != 200 || !strings.Contains(body, "Turns · run 1") || !strings.Contains(body, "(run 1)") || strings.Contains(body, `data-follow="1"`) ||
		!strings.Contains(body, `data-fragment="/h/w?fragment=1&amp;run=1"`) {
		t.Fatalf("a chosen run's page = %d:\n%s", st, body)
	}
	st, body, _ = r.page(c, "/h/w?fragment=turns&run=1")
	if st != 200 || !strings.HasPrefix(body, `<section class="turns"`) || !strings.Contains(body, "(run 1)") {
		t.Fatalf("turns fragment = %d:\n%s", st, body)
	}
	if st, body, _ := r.page(c, "/h/w?run=9"); st != 200 || !strings.Contains(body, "has no run 9") {
		t.Fatalf("a run the harness lacks = %d, want the page with the reason:\n%s", st, body)
	}
	for _, bad := range []string{"/h/w?run=x", "/h/w?run=0", "/h/w?fragment=turns&run=-1"} {
		if st, body, _ := r.page(c, bad); st != http.StatusBadRequest || !strings.Contains(body, "want a run id") {
			t.Fatalf("GET %s = %d %q, want 400", bad, st, body)
		}
	}
	r.b.mu.Lock()
	r.b.calls = nil
	r.b.mu.Unlock()
	if st, body, _ := r.page(c, "/h/w?fragment=1"); st != 200 || strings.Contains(body, `id="turns"`) {
		t.Fatalf("live part = %d:\n%s", st, body)
	}
	if st, body, _ := r.page(c, "/h/plain"); st != 200 || strings.Contains(body, `id="turns"`) || strings.Contains(body, "?run=") {
		t.Fatalf("a generic harness's page = %d shows turns:\n%s", st, body)
	}
	if st, _, _ := r.page(c, "/h/plain?fragment=turns"); st != http.StatusNotFound {
		t.Fatalf("turns fragment of a generic harness = %d, want 404", st)
	}
	if r.b.called("turns ") {
		t.Fatalf("the live part or a generic harness read turns: %v", r.b.calls)
	}

	// The grant: read shows the turns; a token without read is refused
	// before the op runs.
	for _, g := range []struct {
		grant  []string
		status int
	}{{[]string{"read"}, http.StatusOK}, {[]string{"write", "input"}, http.StatusForbidden}} {
		tok, _, err := dashtoken.Mint(r.state, g.grant, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c := r.client()
		r.signIn(c, tok)
		r.b.mu.Lock()
		r.b.calls = nil
		r.b.mu.Unlock()
		for _, path := range []string{"/h/w", "/h/w?fragment=turns"} {
			st, body, _ := r.page(c, path)
			if st != g.status || (st == http.StatusOK) != strings.Contains(body, "Remember [masked]") {
				t.Fatalf("grant %v: GET %s = %d, want %d with the turns only when allowed:\n%s", g.grant, path, st, g.status, body)
			}
		}
		if g.status != http.StatusOK && r.b.called("turns ") {
			t.Fatalf("grant %v: a refused page read turns", g.grant)
		}
	}
}

// TestScenario_AProjectHarnessHasItsOwnPage: a project harness
// ("project/name") is linked as one escaped path segment, and its page,
// its actions, its turns and its terminal's fragment address it whole.
func TestScenario_AProjectHarnessHasItsOwnPage(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	st, body, csrf := r.page(c, "/h/p%2Fx")
	if st != 200 || !r.b.called(`describe {"name":"p/x"}`) {
		t.Fatalf("GET /h/p%%2Fx = %d (describe of p/x called: %v):\n%s", st, r.b.called(`describe {"name":"p/x"}`), body)
	}
	for _, want := range []string{`action="/h/p%2fx/stop"`, `data-fragment="/h/p%2Fx?fragment=1"`, `data-fragment="/h/p%2Fx?fragment=turns"`, `href="/h/p%2fx?run=1#turns"`} {
		if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if st, _ := r.post(c, "/h/p%2Fx/stop", url.Values{"csrf": {csrf}}, map[string]string{csrfHeader: csrf}); st != 200 || !r.b.called(`stop {"name":"p/x"}`) {
		t.Fatalf("POST /h/p%%2Fx/stop = %d; stop of p/x called: %v", st, r.b.called(`stop {"name":"p/x"}`))
	}
	if st, body, _ := r.page(c, "/h/p%2Fx?fragment=turns"); st != 200 || !r.b.called(`turns {"name":"p/x","limit":50}`) {
		t.Fatalf("turns of p/x = %d:\n%s", st, body)
	}
	if _, body, _ := r.page(c, "/"); !strings.Contains(body, `href="/h/a"`) {
		t.Fatalf("the fleet's link of a global harness changed:\n%s", body)
	}
}
