//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OAuth (docs/design/mcp.md): an upstream with auth = "oauth" against a real
// authorization server (oauthserver.mjs: the TypeScript SDK's server-side
// auth support: RFC 8414 and RFC 9728 metadata, dynamic client
// registration, PKCE, code and refresh grants) that is also the protected
// MCP server. A person signs in with `harness mcp login`, played here by
// an HTTP client that opens the printed URL and follows the redirects as a
// browser would.

// oauthServer is a running oauthserver.mjs.
type oauthServer struct {
	url  string // the MCP endpoint
	base string
	cmd  *exec.Cmd
	done chan struct{}
	errs syncBuffer
}

func startOAuthServer(t *testing.T, accessTTL int, env ...string) *oauthServer {
	t.Helper()
	s := &oauthServer{done: make(chan struct{})}
	s.cmd = exec.Command(nodeBin, filepath.Join(interopDir, "oauthserver.mjs"))
	s.cmd.Env = cleanEnv(append(env, fmt.Sprintf("ACCESS_TTL=%d", accessTTL))...)
	s.cmd.Stderr = &s.errs
	s.cmd.SysProcAttr = withParentDeath(&syscall.SysProcAttr{Setpgid: true})
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		first <- line
		io.Copy(io.Discard, r)
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done: // reaped: its id may be someone else's now
		default:
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-s.done
	})
	select {
	case line := <-first:
		var hello struct{ URL string }
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.URL == "" {
			t.Fatalf("oauthserver.mjs said %q (%v)\nstderr: %s", line, err, s.errs.String())
		}
		s.url, s.base = hello.URL, strings.TrimSuffix(hello.URL, "/mcp")
	case <-time.After(60 * time.Second):
		t.Fatalf("oauthserver.mjs did not start\nstderr: %s", s.errs.String())
	}
	return s
}

// oauthStats are the server's counters.
type oauthStats struct {
	Registrations, Authorizations, CodeExchanges, Refreshes, RefusedRefreshes int
	MCPRequests                                                               int `json:"mcpRequests"`
	MCPRefused                                                                int `json:"mcpRefused"`
	MCPRefusedWithToken                                                       int `json:"mcpRefusedWithToken"`
	ToolCalls                                                                 int `json:"toolCalls"`
}

func (s *oauthServer) stats(t *testing.T) oauthStats {
	t.Helper()
	var st oauthStats
	s.getJSON(t, "/admin/stats", &st)
	return st
}

// issued is every access and refresh token the server handed out.
func (s *oauthServer) issued(t *testing.T) []string {
	t.Helper()
	var out []string
	s.getJSON(t, "/admin/issued", &out)
	return out
}

func (s *oauthServer) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// revoke is the server's operator revoking every token, or with
// accessOnly the access tokens only.
func (s *oauthServer) revoke(t *testing.T, accessOnly bool) {
	t.Helper()
	q := ""
	if accessOnly {
		q = "?only=access"
	}
	resp, err := http.Post(s.base+"/admin/revoke"+q, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// login runs `harness mcp login KEY` as a person would: it reads the URL
// the CLI prints, opens it with a browser-like client that follows every
// redirect (the authorization server's to the daemon's loopback port),
// and waits for the CLI to say it is signed in. It returns everything the
// CLI and the browser were shown.
func (f *fleet) login(t *testing.T, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, harnessBin, "--socket", f.Socket, "mcp", "login", key)
	c.Env = cleanEnv()
	var errOut syncBuffer
	c.Stderr = &errOut
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	authURL, err := r.ReadString('\n')
	if err != nil {
		c.Wait()
		t.Fatalf("mcp login printed no URL: %v\nstderr: %s\nlog:\n%s", err, errOut.String(), f.Log())
	}
	authURL = strings.TrimSpace(authURL)
	for _, want := range []string{"code_challenge_method=S256", "code_challenge=", "resource=", "redirect_uri=http%3A%2F%2F127.0.0.1"} {
		if !strings.Contains(authURL, want) {
			t.Errorf("authorization URL %s lacks %s", authURL, want)
		}
	}
	browser := &http.Client{Timeout: 30 * time.Second}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "signed in to "+key) {
		t.Fatalf("browser landed on %s: HTTP %d %s", resp.Request.URL, resp.StatusCode, page)
	}
	rest, _ := io.ReadAll(r)
	if err := c.Wait(); err != nil {
		t.Fatalf("mcp login: %v\nstdout: %s\nstderr: %s", err, rest, errOut.String())
	}
	if !strings.Contains(string(rest), "signed in to "+key) {
		t.Errorf("mcp login said %q", rest)
	}
	return authURL + "\n" + string(page) + string(rest) + errOut.String()
}

func upstreamState(f *fleet, key string) (state, lastErr string) {
	var st []struct {
		Key, State string
		LastError  string `json:"last_error"`
	}
	f.MustJSON(&st, "mcp", "status")
	for _, u := range st {
		if u.Key == key {
			return u.State, u.LastError
		}
	}
	return "", ""
}

func TestScenario_OAuthUpstreamSignsInRefreshesAndNeedsLoginAgain(t *testing.T) {
	const ttl = 4 // seconds an access token lives
	as := startOAuthServer(t, ttl)
	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[mcp.oa]\nurl = %q\nauth = \"oauth\"\nrestart_delay = 0.2\n", as.url))
	var shown strings.Builder // every answer and output a person or agent saw
	var frames syncBuffer

	// Before any sign-in: needs_login, and a call says what to run.
	f.WaitFor("needs_login before the first sign-in", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "oa")
		return st == "needs_login"
	})
	_, lastErr := upstreamState(f, "oa")
	if !strings.Contains(lastErr, "harness mcp login oa") {
		t.Errorf("last_error %q does not say to log in", lastErr)
	}
	out, _, _ := f.Run("mcp", "status")
	shown.WriteString(out)
	if !strings.Contains(out, "needs_login") {
		t.Errorf("mcp status:\n%s", out)
	}
	if _, errOut, code := f.Run("mcp", "login", "nope"); code == 0 || !strings.Contains(errOut, "no upstream") {
		t.Errorf("mcp login of an unknown upstream: exit %d, %s", code, errOut)
	}
	s := goSession(t, f, &frames, func(*mcp.ProgressNotificationParams) {})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, text, err := goCall(ctx, s, "oa__whoami", nil)
	if err != nil || code != "upstream_unavailable" || !strings.Contains(text, "harness mcp login oa") {
		t.Errorf("call before sign-in: code %q text %q err %v", code, text, err)
	}

	// Sign in: discovery, dynamic registration, PKCE, code, tokens.
	shown.WriteString(f.login(t, "oa"))
	st := as.stats(t)
	if st.Registrations != 1 || st.Authorizations != 1 || st.CodeExchanges != 1 {
		t.Errorf("after login: %+v", st)
	}
	tokenFile := filepath.Join(f.State, "oauth", "mcp.oa.json")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(tokenFile)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("token dir: %v %v", fi, err)
	}
	f.WaitFor("oa running after the sign-in", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "oa")
		return st == "running"
	})
	code, text, err = goCall(ctx, s, "oa__whoami", nil)
	if err != nil || code != "" || !strings.Contains(text, "client ") {
		t.Fatalf("call after sign-in: code %q text %q err %v\nlog:\n%s", code, text, err, f.Log())
	}
	// A server that echoes the token it got: the agent sees it hidden.
	if code, text, err = goCall(ctx, s, "oa__echo_auth", nil); err != nil || code != "" || text != "token (hidden)" {
		t.Errorf("echo_auth answered code %q text %q err %v, want the token hidden", code, text, err)
	}

	// The access token expires (ttl); calls keep succeeding, because it is
	// refreshed before it does, and no request ever carries a dead token.
	before := as.stats(t)
	deadline := time.Now().Add(3 * ttl * time.Second)
	calls := 0
	for time.Now().Before(deadline) {
		code, text, err = goCall(ctx, s, "oa__echo", map[string]any{"message": fmt.Sprintf("call %d", calls)})
		if err != nil || code != "" || text != fmt.Sprintf("call %d", calls) {
			t.Fatalf("call %d while tokens expire: code %q text %q err %v\nlog:\n%s", calls, code, text, err, f.Log())
		}
		calls++
		time.Sleep(250 * time.Millisecond) // spread the calls over the tokens' lives
	}
	after := as.stats(t)
	if after.Refreshes-before.Refreshes < 2 {
		t.Errorf("%d refreshes over %d token lifetimes", after.Refreshes-before.Refreshes, 3)
	}
	if after.MCPRefusedWithToken != 0 {
		t.Errorf("%d requests went out with a token the server refused: %+v", after.MCPRefusedWithToken, after)
	}
	t.Logf("%d calls over %ds: %d refreshes, %d MCP requests, none refused", calls, 3*ttl, after.Refreshes-before.Refreshes, after.MCPRequests-before.MCPRequests)

	// The server forgets its access tokens before they expire: the next
	// call is refused (401), the token refreshed, the request retried.
	before = as.stats(t)
	as.revoke(t, true)
	code, text, err = goCall(ctx, s, "oa__echo", map[string]any{"message": "after a 401"})
	if err != nil || code != "" || text != "after a 401" {
		t.Errorf("call after the access tokens were revoked: code %q text %q err %v", code, text, err)
	}
	if after := as.stats(t); after.MCPRefusedWithToken-before.MCPRefusedWithToken < 1 || after.Refreshes == before.Refreshes {
		t.Errorf("no 401 and refresh behind that call: before %+v after %+v", before, after)
	}

	// The server revokes every token: the next call finds the access token
	// refused, the refresh refused too, and says to log in again.
	as.revoke(t, false)
	code, text, err = goCall(ctx, s, "oa__whoami", nil)
	if err != nil || code != "upstream_unavailable" || !strings.Contains(text, "harness mcp login oa") {
		t.Errorf("call after revocation: code %q text %q err %v", code, text, err)
	}
	f.WaitFor("needs_login after the revocation", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "oa")
		return st == "needs_login"
	})
	if st := as.stats(t); st.RefusedRefreshes == 0 {
		t.Errorf("no refresh was tried after the revocation: %+v", st)
	}
	code, text, err = goCall(ctx, s, "oa__whoami", nil)
	if err != nil || code != "upstream_unavailable" || !strings.Contains(text, "harness mcp login oa") {
		t.Errorf("call while needs_login: code %q text %q err %v", code, text, err)
	}

	// Sign in again; then sign out.
	shown.WriteString(f.login(t, "oa"))
	f.WaitFor("oa running after the second sign-in", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "oa")
		return st == "running"
	})
	if code, text, err = goCall(ctx, s, "oa__whoami", nil); err != nil || code != "" {
		t.Errorf("call after the second sign-in: code %q text %q err %v", code, text, err)
	}
	// The grep below finds a token where there is one: the token file has
	// the ones in use.
	if b, err := os.ReadFile(tokenFile); err != nil || !containsAny(string(b), as.issued(t)) {
		t.Fatalf("the token file holds no issued token (%v)", err)
	}
	out, errOut, exit := f.Run("mcp", "logout", "oa")
	shown.WriteString(out + errOut)
	if exit != 0 || !strings.Contains(out, "signed out of oa") {
		t.Errorf("mcp logout: exit %d %s %s", exit, out, errOut)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("token file after logout: %v", err)
	}
	f.WaitFor("needs_login after logout", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "oa")
		return st == "needs_login"
	})
	out, _, _ = f.Run("mcp", "status", "--json")
	shown.WriteString(out)
	out, _, _ = f.Run("daemon-info", "--json")
	shown.WriteString(out)
	out, _, _ = f.Run("calls", "--json")
	shown.WriteString(out)
	out, _, _ = f.Run("describe", "mcp.oa", "--json")
	shown.WriteString(out)
	shown.WriteString(f.metrics(t))

	// No token anywhere but the token file (gone now): not in the state
	// dir, the daemon's log, the call log, the CLI's output, the browser's
	// pages or any MCP frame.
	issued := as.issued(t)
	if len(issued) < 6 {
		t.Fatalf("the server issued only %d tokens", len(issued))
	}
	s.Close()
	haystacks := map[string]string{"daemon log": f.Log(), "daemon stderr": f.Stderr.String(), "shown": shown.String(), "mcp frames": frames.String()}
	filepath.WalkDir(f.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			haystacks[path] = string(b)
		}
		return nil
	})
	if !strings.Contains(frames.String(), "oa__whoami") {
		t.Fatal("the frame capture is empty")
	}
	for _, tok := range issued {
		for where, hay := range haystacks {
			if strings.Contains(hay, tok) {
				t.Errorf("token %.8s… found in %s", tok, where)
			}
		}
	}
}

// metrics is the daemon's /metrics, read with the operator token.
func (f *fleet) metrics(t *testing.T) string {
	t.Helper()
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	tok, _, code := f.Run("--state-dir", f.State, "mcp", "token")
	if code != 0 || info.MCPURL == "" {
		t.Fatalf("no HTTP endpoint or token (exit %d)", code)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(info.MCPURL, "/mcp")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "oa") {
		t.Fatalf("/metrics: HTTP %d %.300s", resp.StatusCode, b)
	}
	return string(b)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// With client_id configured there is no dynamic registration: the
// preregistered client signs in, with the configured scopes.
func TestScenario_OAuthUpstreamWithAConfiguredClientID(t *testing.T) {
	as := startOAuthServer(t, 3600, "PRECLIENT=harness-pre")
	f := newFleet(t, fmt.Sprintf("[mcp.pre]\nurl = %q\nauth = \"oauth\"\nclient_id = \"harness-pre\"\nscopes = [\"mcp:tools\"]\n", as.url))
	f.WaitFor("needs_login", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "pre")
		return st == "needs_login"
	})
	f.login(t, "pre")
	if st := as.stats(t); st.Registrations != 0 || st.Authorizations != 1 || st.CodeExchanges != 1 {
		t.Errorf("after login with a client_id: %+v", st)
	}
	f.WaitFor("pre running", 30*time.Second, func() bool {
		st, _ := upstreamState(f, "pre")
		return st == "running"
	})
	s := goSession(t, f, io.Discard, func(*mcp.ProgressNotificationParams) {})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, text, err := goCall(ctx, s, "pre__whoami", nil)
	if err != nil || code != "" || text != "client harness-pre scopes mcp:tools" {
		t.Errorf("whoami: code %q text %q err %v", code, text, err)
	}
}
