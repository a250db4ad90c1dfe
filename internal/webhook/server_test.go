package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// testServer is a Server over a temporary state dir whose trigger records
// the deliveries that would start the job.
type testServer struct {
	*Server
	mu        sync.Mutex
	triggered []string     // HARNESS_DELIVERY of each trigger
	log       bytes.Buffer // written by the handler, on the test's goroutine
	closeOnce sync.Once
}

// stop closes the server, as a daemon stop does.
func (ts *testServer) stop() { ts.closeOnce.Do(func() { ts.Server.Close() }) }

func newTestServer(t *testing.T, dir string, hooks ...*config.Webhook) *testServer {
	t.Helper()
	ts := &testServer{}
	s, err := New(Options{
		Dir: dir,
		Trigger: func(_ context.Context, job string, env []string) (api.TriggerResult, error) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, EnvDelivery+"="); ok {
					ts.triggered = append(ts.triggered, v)
				}
			}
			return api.TriggerResult{Name: job, RunID: uint64(len(ts.triggered))}, nil
		},
		RunKept: func(uint64) bool { return true },
		Logger:  slog.New(slog.NewTextHandler(&ts.log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.stop)
	m := map[string]*config.Webhook{}
	for _, h := range hooks {
		m[h.Name] = h
	}
	s.Apply(m)
	ts.Server = s
	return ts
}

func (ts *testServer) runs() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.triggered...)
}

// post sends one delivery from remote (host:port) through the real handler.
func (ts *testServer) post(remote, path string, body []byte, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.RemoteAddr = remote
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	ts.ServeHTTP(rec, req)
	return rec
}

func standardSig(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func githubHook(rate int) *config.Webhook {
	return &config.Webhook{Name: "gh", Path: "/gh", Verify: config.VerifyGitHub, Secret: "${S}",
		Env: map[string]string{"S": "s3cret"}, Harnesses: []string{"job"}, MaxBody: 1 << 10, RateLimit: rate,
		SecretAt: "harness.toml:9: webhook.gh.secret"}
}

// TestScenario_AStrangersBadSignaturesDoNot429TheSendersDeliveries: a
// stranger floods a route of rate_limit 3 with bad signatures and bodies
// too large; it gets 3 refusals and then 429s without its body read, and
// GitHub's own 3 deliveries a minute, from another address, all start
// the job. Verified deliveries alone are what rate_limit bounds.
func TestScenario_AStrangersBadSignaturesDoNot429TheSendersDeliveries(t *testing.T) {
	ts := newTestServer(t, t.TempDir(), githubHook(3))
	const stranger, github = "203.0.113.9:40000", "140.82.115.1:50000"
	var codes []int
	for i := range 10 {
		body := []byte(fmt.Sprintf(`{"junk":%d}`, i))
		if i%4 == 3 {
			body = bytes.Repeat([]byte("x"), 2<<10) // over max_body_bytes
		}
		codes = append(codes, ts.post(stranger, "/gh", body, "X-Hub-Signature-256", "sha256="+hexMAC("guess", body), "X-GitHub-Delivery", fmt.Sprint("j", i)).Code)
	}
	want := []int{401, 401, 401, 429, 429, 429, 429, 429, 429, 429}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("stranger got %v, want %v", codes, want)
	}
	for i := range 4 {
		body := []byte(fmt.Sprintf(`{"action":"opened","n":%d}`, i))
		rec := ts.post(github, "/gh", body, "X-Hub-Signature-256", "sha256="+hexMAC("s3cret", body),
			"X-GitHub-Delivery", fmt.Sprint("d", i), "X-GitHub-Event", "pull_request")
		if want := map[bool]int{true: 202, false: 429}[i < 3]; rec.Code != want {
			t.Errorf("delivery %d: %d %s, want %d", i, rec.Code, rec.Body, want)
		}
	}
	if got := ts.runs(); fmt.Sprint(got) != "[d0 d1 d2]" {
		t.Errorf("runs %v", got)
	}
	st := ts.Stats()[0]
	if st.Rejected != 3 || st.SourceLimited != 7 || st.Limited != 1 || st.Accepted != 3 {
		t.Errorf("stats %+v", st)
	}
	// Behind a proxy on loopback, the address it forwards is the source.
	body := []byte(`{"n":"proxied"}`)
	rec := ts.post("127.0.0.1:9", "/gh", body, "X-Forwarded-For", "198.51.100.7, 203.0.113.9",
		"X-Hub-Signature-256", "sha256="+hexMAC("guess", body))
	if rec.Code != 429 {
		t.Errorf("the stranger through a proxy: %d", rec.Code)
	}
	if rec := ts.post("127.0.0.1:9", "/gh", body, "X-Forwarded-For", "198.51.100.7",
		"X-Hub-Signature-256", "sha256="+hexMAC("guess", body)); rec.Code != 401 {
		t.Errorf("another address through the proxy: %d", rec.Code)
	}
}

// TestScenario_AnEmptySecretAcceptsNothing: a signature made with an
// empty key is refused by every HMAC scheme when the secret is empty, and
// a route whose env_file resolves its secret to "" answers 500 and logs
// the config line of the secret.
func TestScenario_AnEmptySecretAcceptsNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"action":"opened"}`)
	ts := fmt.Sprint(now.Unix())
	for _, tt := range []struct {
		scheme, secret string
		h              http.Header
	}{
		{config.VerifyGitHub, "", http.Header{"X-Hub-Signature-256": {"sha256=" + hexMAC("", body)}, "X-Github-Delivery": {"1"}}},
		{config.VerifyGitea, "", http.Header{"X-Gitea-Signature": {hexMAC("", body)}, "X-Gitea-Delivery": {"1"}}},
		{config.VerifyStandard, "", http.Header{"Webhook-Id": {"m"}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {standardSig(nil, "m", ts, body)}}},
		{config.VerifyStandard, "whsec_", http.Header{"Webhook-Id": {"m"}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {standardSig(nil, "m", ts, body)}}},
		{config.VerifyBearer, "", http.Header{"Authorization": {"Bearer "}}},
	} {
		if d, err := Verify(tt.scheme, tt.secret, tt.h, body, now); err == nil {
			t.Errorf("%s with secret %q accepted an empty-key signature: %+v", tt.scheme, tt.secret, d)
		}
	}

	dir := t.TempDir()
	envFile := filepath.Join(dir, "gh.env")
	if err := os.WriteFile(envFile, []byte("S=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := githubHook(60)
	hook.Env, hook.EnvFile = nil, envFile
	srv := newTestServer(t, filepath.Join(dir, "state"), hook)
	rec := srv.post("140.82.115.1:1", "/gh", body, "X-Hub-Signature-256", "sha256="+hexMAC("", body), "X-GitHub-Delivery", "e1")
	if rec.Code != http.StatusInternalServerError || len(srv.runs()) != 0 {
		t.Errorf("empty env_file secret: %d %s, runs %v", rec.Code, rec.Body, srv.runs())
	}
	if !strings.Contains(srv.log.String(), "harness.toml:9: webhook.gh.secret: resolves to an empty string") {
		t.Errorf("log does not name the secret's line: %s", srv.log.String())
	}
}

// TestScenario_ACapturedDeliveryIsNotRunAgainUnderAnotherIDOrNone: a
// signed GitHub delivery sent again with a new X-GitHub-Delivery answers
// duplicate, also after a daemon restart; sent without one it is refused
// (GitHub and Gitea always send one); only the first runs the job.
func TestScenario_ACapturedDeliveryIsNotRunAgainUnderAnotherIDOrNone(t *testing.T) {
	dir := t.TempDir()
	gitea := &config.Webhook{Name: "tea", Path: "/tea", Verify: config.VerifyGitea, Secret: "${S}",
		Env: map[string]string{"S": "s3cret"}, Harnesses: []string{"job"}, MaxBody: 1 << 10, RateLimit: 60}
	ts := newTestServer(t, dir, githubHook(60), gitea)
	body := []byte(`{"action":"opened","number":7}`)
	sig := "sha256=" + hexMAC("s3cret", body)
	const from = "140.82.115.1:1"
	status := func(rec *httptest.ResponseRecorder) string {
		var a struct{ Status string }
		json.Unmarshal(rec.Body.Bytes(), &a)
		return fmt.Sprint(rec.Code, " ", a.Status)
	}
	for _, step := range []struct {
		srv           *testServer
		path, id, sig string
		want          string
	}{
		{ts, "/gh", "first", sig, "202 accepted"},
		{ts, "/gh", "first", sig, "200 duplicate"},
		{ts, "/gh", "forged-new-id", sig, "200 duplicate"},
		{ts, "/gh", "", sig, "400 "},
		{ts, "/tea", "t1", hexMAC("s3cret", body), "202 accepted"},
		{ts, "/tea", "", hexMAC("s3cret", body), "400 "},
		{ts, "/tea", "t2", hexMAC("s3cret", body), "200 duplicate"},
	} {
		hdr := []string{"X-Hub-Signature-256", step.sig, "X-Gitea-Signature", step.sig}
		if step.id != "" {
			hdr = append(hdr, "X-GitHub-Delivery", step.id, "X-Gitea-Delivery", step.id)
		}
		if got := status(step.srv.post(from, step.path, body, hdr...)); got != step.want {
			t.Errorf("%s id %q: %s, want %s", step.path, step.id, got, step.want)
		}
	}
	if got := ts.runs(); fmt.Sprint(got) != "[first t1]" {
		t.Errorf("runs %v", got)
	}
	ts.stop()
	again := newTestServer(t, dir, githubHook(60))
	if got := status(again.post(from, "/gh", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "after-restart")); got != "200 duplicate" {
		t.Errorf("after a restart: %s", got)
	}
}
