package httpmcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

// raw sends one POST to the endpoint. hdr values override the defaults;
// "Host" sets the Host header.
func (e *env) raw(t *testing.T, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	client := httpClient(t, "")
	defer client.CloseIdleConnections() // one connection per call, not one kept per call
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp, string(data)
}

func auth(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func TestHarnessTokenSeesItsScope(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read")
	e.auth.Add("tok-ops", "ops", "read", "write")

	web := e.mustConnect(t, "tok-web")
	if got := mcptest.ToolNames(t, web); !slices.Equal(got, readTools) {
		t.Fatalf("web (read) tools %v", got)
	}
	ops := e.mustConnect(t, "tok-ops")
	if got := mcptest.ToolNames(t, ops); !slices.Equal(got, allTools) {
		t.Fatalf("ops (read,write) tools %v", got)
	}

	// Calls are attributed to the harness, as over the socket.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := web.CallTool(ctx, &mcp.CallToolParams{Name: "harness_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("harness_list: %+v, %v", res, err)
	}
	if got := e.ops.Callers(); !slices.Contains(got, api.Caller{Kind: api.Session, Harness: "web"}) {
		t.Fatalf("callers %+v, want web's session", got)
	}

	// The scope is the live config's: widening web's grant shows up.
	e.auth.Add("tok-web", "web", "read", "write")
	e.sessions.Refresh()
	if got := mcptest.ToolNames(t, web); !slices.Equal(got, allTools) {
		t.Fatalf("web after widening %v", got)
	}

	// Two sessions, many requests: two session servers plus at most the one
	// shared probe server (the go-sdk client's server/discover), never one
	// per request.
	if n := e.sessions.built.Load(); n < 2 || n > 3 {
		t.Fatalf("built %d servers for 2 sessions", n)
	}
}

func TestOperatorTokenReadsAndWritesOnlyWhenAllowed(t *testing.T) {
	e := newEnv(t)
	cs := e.mustConnect(t, operatorToken)
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
		t.Fatalf("operator (read) tools %v", got)
	}

	// The grant is the live config's, as for a harness: the open session
	// carries on and, after the reload's Refresh, lists the new tools.
	e.auth.SetOperator("read", "harness:write")
	e.sessions.Refresh()
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, allTools) {
		t.Fatalf("operator (read, harness:write) tools %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "harness_start", Arguments: map[string]any{"name": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("operator write call: %+v, %v", res, err)
	}
	if got := e.ops.Callers(); !slices.Equal(got, []api.Caller{{Kind: api.Session, Actor: "token:operator"}}) {
		t.Fatalf("callers %+v, want one session of the operator token", got)
	}

	// Narrowing holds from the very next call, listed or not.
	e.auth.SetOperator("read")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "harness_start", Arguments: map[string]any{"name": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not_permitted") {
		t.Fatalf("operator write after narrowing: %+v, %v", res, err)
	}
	cs2 := e.mustConnect(t, operatorToken)
	if got := mcptest.ToolNames(t, cs2); !slices.Equal(got, readTools) {
		t.Fatalf("operator back to read: %v", got)
	}
}

func TestMissingOrWrongTokenIs401WithoutDetail(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read")
	for name, hdr := range map[string]map[string]string{
		"none":         nil,
		"wrong":        auth("nope"),
		"empty":        {"Authorization": "Bearer "},
		"basic":        {"Authorization": "Basic " + operatorToken},
		"not-bearer":   {"Authorization": operatorToken},
		"two-words":    {"Authorization": "Bearer tok-web extra"},
		"operator-ish": auth(operatorToken[:63]),
	} {
		resp, body := e.raw(t, Path, initBody, hdr)
		if resp.StatusCode != http.StatusUnauthorized || body != "unauthorized\n" {
			t.Errorf("%s: %d %q, want 401 unauthorized", name, resp.StatusCode, body)
		}
	}
	if _, err := e.connect(t, ""); err == nil {
		t.Fatal("a client without a token connected")
	}
	if n := e.sessions.built.Load(); n != 0 {
		t.Fatalf("built %d servers for refused requests", n)
	}
}

func TestRevokedTokenGets401AndItsSessionEnds(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read")
	cs := e.mustConnect(t, "tok-web")
	mcptest.ToolNames(t, cs)

	e.auth.Revoke("tok-web")
	resp, body := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer tok-web", sessionIDHeader: cs.ID()})
	if resp.StatusCode != http.StatusUnauthorized || body != "unauthorized\n" {
		t.Fatalf("revoked token: %d %q", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Fatal("a revoked token still lists tools")
	}

	// Even with the token back, the session it had is gone.
	e.auth.Add("tok-web", "web", "read")
	if resp, _ := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer tok-web", sessionIDHeader: cs.ID()}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("ended session: %d, want 404", resp.StatusCode)
	}
}

func TestSweepEndsSessionsOfRevokedTokens(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-old", "web", "read")
	old := e.mustConnect(t, "tok-old")
	mcptest.ToolNames(t, old)
	e.auth.Revoke("tok-old") // the run ended; its client never comes back

	e.auth.Add("tok-new", "web", "read")
	e.mustConnect(t, "tok-new") // a new session sweeps
	e.auth.Add("tok-old", "web", "read")
	if resp, _ := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer tok-old", sessionIDHeader: old.ID()}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("swept session: %d, want 404", resp.StatusCode)
	}
}

func TestSessionIsBoundToItsToken(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read", "write")
	e.auth.Add("tok-other", "other", "read")
	cs := e.mustConnect(t, "tok-web")
	mcptest.ToolNames(t, cs)

	for _, tok := range []string{"tok-other", operatorToken} {
		resp, _ := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer " + tok, sessionIDHeader: cs.ID()})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("session of tok-web used with another token: %d, want 403", resp.StatusCode)
		}
	}
	// A stranger's bad token is refused and cannot end the owner's session.
	if resp, _ := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer nope", sessionIDHeader: cs.ID()}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token on a live session: %d, want 401", resp.StatusCode)
	}
	if resp, _ := e.raw(t, Path, listBody, map[string]string{"Authorization": "Bearer tok-other", sessionIDHeader: "no-such-session"}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session id: %d, want 404", resp.StatusCode)
	}
	// The owner goes on undisturbed.
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, allTools) {
		t.Fatalf("owner after hijack attempts: %v", got)
	}
	// Closing the client deletes the session, and its binding goes with it.
	if n := e.boundCount(); n != 1 {
		t.Fatalf("%d bindings for one session", n)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := e.boundCount(); n != 0 {
		t.Fatalf("%d bindings after the client closed", n)
	}
}

// TestForeignHostOrOriginIs403 is DNS rebinding protection: a name other
// than a loopback one is refused whatever the port, and a loopback name is
// accepted whatever the port, so an SSH tunnel (`ssh -L 9000:127.0.0.1:7330`,
// Host localhost:9000) or a loopback reverse proxy gets through.
func TestForeignHostOrOriginIs403(t *testing.T) {
	e := newEnv(t)
	_, port, _ := strings.Cut(e.addr, ":")
	tok := "Bearer " + operatorToken
	for name, hdr := range map[string]map[string]string{
		"foreign host":            {"Host": "evil.example:" + port},
		"foreign host no port":    {"Host": "evil.example"},
		"loopback-looking name":   {"Host": "localhost.evil.example:" + port},
		"127 as a subdomain":      {"Host": "127.0.0.1.evil.example"},
		"private address":         {"Host": "192.168.1.10:" + port},
		"all interfaces":          {"Host": "0.0.0.0:" + port},
		"host with a bad port":    {"Host": "localhost:x"},
		"foreign origin":          {"Origin": "http://evil.example"},
		"foreign origin loopback": {"Origin": "http://evil.example:" + port},
		"origin ftp scheme":       {"Origin": "ftp://127.0.0.1:" + port},
		"null origin":             {"Origin": "null"},
		"origin with userinfo":    {"Origin": "http://localhost@evil.example"},
		"origin with a path":      {"Origin": "http://localhost/x"},
	} {
		hdr["Authorization"] = tok
		resp, _ := e.raw(t, Path, initBody, hdr)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	for name, hdr := range map[string]map[string]string{
		"localhost host":          {"Host": "localhost:" + port},
		"ipv6 host":               {"Host": "[::1]:" + port},
		"ssh tunnel port":         {"Host": "localhost:9000"},
		"proxy on 127.0.0.2":      {"Host": "127.0.0.2:8080"},
		"bracketed ipv6 no port":  {"Host": "[::1]"},
		"host without port":       {"Host": "localhost"},
		"upper-case host":         {"Host": "LOCALHOST:9000"},
		"loopback origin":         {"Origin": "http://127.0.0.1:" + port},
		"localhost origin":        {"Origin": "http://localhost:" + port},
		"tunnel origin":           {"Origin": "http://localhost:9000"},
		"ipv6 origin":             {"Origin": "http://[::1]:9000"},
		"https proxy origin":      {"Origin": "https://localhost:8443"},
		"origin without a port":   {"Origin": "http://localhost"},
		"tunnel host and origin":  {"Host": "localhost:9000", "Origin": "http://localhost:9000"},
		"proxy host, ipv4 origin": {"Host": "127.0.0.1:8080", "Origin": "http://127.0.0.1:8080"},
	} {
		hdr["Authorization"] = tok
		resp, body := e.raw(t, Path, initBody, hdr)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
			t.Errorf("%s: %d %q, want an initialize result", name, resp.StatusCode, body)
		}
	}
}

func TestOtherPathsAre404(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/", "/mcp/", "/mcpx", "/sse"} {
		if resp, _ := e.raw(t, p, initBody, auth(operatorToken)); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}

func TestRawInitializeBindsTheSessionID(t *testing.T) {
	e := newEnv(t)
	resp, body := e.raw(t, Path, initBody, auth(operatorToken))
	sid := resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q (session %q)", resp.StatusCode, body, sid)
	}
	hdr := auth(operatorToken)
	hdr[sessionIDHeader] = sid
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if resp, body := e.raw(t, Path, note, hdr); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", resp.StatusCode, body)
	}
	resp, body = e.raw(t, Path, listBody, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %q", resp.StatusCode, body)
	}
	_, data, _ := strings.Cut(body, "data: ")
	var msg struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &msg); err != nil || len(msg.Result.Tools) != len(readTools) {
		t.Fatalf("tools/list body %q: %v", body, err)
	}
}
