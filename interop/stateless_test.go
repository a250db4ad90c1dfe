//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP 2026-07-28 (stateless HTTP) and 2025-11-25 (sessions) on
// the one endpoint, at the same time: the go-sdk v1.8.0 client at its
// latest revision, the same client pinned to 2025-11-25, and the
// TypeScript SDK client (which speaks 2025-11-25). Each stateless request
// is attributed by its own token and judged by the grant in force.

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func goClient(t *testing.T, url, token, version string, changed chan<- struct{}) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-" + version, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, opts)
	if err != nil {
		t.Fatalf("connect (%s): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// goCall calls a tool and returns its error code ("" for success) and text.
func goCall(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", "", err
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError {
		return "", text, nil
	}
	var body struct{ Code string }
	if json.Unmarshal([]byte(text), &body) != nil || body.Code == "" {
		return "tool_error", text, nil
	}
	return body.Code, text, nil
}

func TestScenario_StatelessAndSessionClientsShareTheEndpoint(t *testing.T) {
	dir := t.TempDir()
	config := func(agentAllow string) string {
		return fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[mcp.memory]\ncmd = %q\nenv = { MEMORY_FILE_PATH = %q }\n",
			bin("mcp-server-memory"), dir+"/memory.jsonl") + facadeConfig +
			tokenHarness("agent", dir, "mcp_allow = "+agentAllow) +
			tokenHarness("viewer", dir, `mcp_allow = ["read"]`)
	}
	f := newFleetAt(t, dir, config(`["read", "write"]`))
	f.waitUpstreams("memory")
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	agentTok, viewerTok := f.harnessToken(dir, "agent"), f.harnessToken(dir, "viewer")
	opTok, _, code := f.Run("--state-dir", f.State, "mcp", "token")
	if code != 0 {
		t.Fatalf("mcp token: %d", code)
	}

	changed := make(chan struct{}, 4)
	modern := goClient(t, info.MCPURL, agentTok, "", changed)
	if v := modern.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the go-sdk client negotiated %q, want 2026-07-28", v)
	}
	legacy := goClient(t, info.MCPURL, viewerTok, "2025-11-25", nil)
	if v := legacy.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("the pinned go-sdk client negotiated %q, want 2025-11-25", v)
	}
	ts := startTS(t,
		connectStep("h", map[string]any{"type": "http", "url": info.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + strings.TrimSpace(opTok)}}),
		opStep("h", "pause"),
		opStep("h", "callTool", "name", "harness_list"),
		opStep("h", "callTool", "name", "memory__read_graph"),
	)
	var conn struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	ts.must(ts.next(), &conn)
	if conn.ProtocolVersion != "2025-11-25" {
		t.Errorf("the TypeScript client negotiated %q", conn.ProtocolVersion)
	}
	ts.next() // paused: its session is open while the Go clients work

	// Both Go clients at once, each call on its own request.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 10 {
		for _, c := range []struct {
			name string
			cs   *mcp.ClientSession
		}{{"modern", modern}, {"legacy", legacy}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tool := "harness_list"
				if i%2 == 1 {
					tool = "memory__read_graph"
				}
				if code, text, err := goCall(ctx, c.cs, tool, nil); err != nil || code != "" {
					errs <- fmt.Sprintf("%s %s: %q %s %v", c.name, tool, code, text, err)
				}
			}()
		}
	}
	ts.resume()
	for range 2 {
		var r toolResult
		ts.must(ts.next(), &r)
		if r.IsError {
			t.Errorf("TypeScript client call during the Go calls: %s", r.text())
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	// Attribution and grant per request: the agent may stop, the viewer not.
	if code, text, err := goCall(ctx, modern, "harness_stop", map[string]any{"name": "sleeper"}); err != nil || code != "" {
		t.Fatalf("agent (write) stopping sleeper statelessly: %q %s %v", code, text, err)
	}
	if code, _, _ := goCall(ctx, legacy, "harness_start", map[string]any{"name": "sleeper"}); code != "not_permitted" {
		t.Errorf("viewer (read) starting sleeper: %q", code)
	}
	var calls struct {
		Calls []struct{ Transport, Caller, Harness, Tool, Outcome, Session string } `json:"calls"`
	}
	f.MustJSON(&calls, "calls", "--tool", "harness_stop")
	if len(calls.Calls) != 1 || calls.Calls[0].Harness != "agent" || calls.Calls[0].Transport != "http" || calls.Calls[0].Outcome != "ok" || calls.Calls[0].Session == "" {
		t.Errorf("call log of the stateless stop: %+v", calls.Calls)
	}

	// A reload narrows the agent's grant: its very next request is judged
	// by it, with no new handshake, and its listen stream hears about it.
	if err := os.WriteFile(f.Config, []byte(config(`["read"]`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := f.Run("reload"); code != 0 {
		t.Fatalf("reload: %s %s", out, errOut)
	}
	if code, _, _ := goCall(ctx, modern, "harness_start", map[string]any{"name": "sleeper"}); code != "not_permitted" {
		t.Errorf("agent after its grant narrowed: %q, want not_permitted", code)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Errorf("the stateless client got no tools/list_changed after its grant narrowed")
	}
	lt, err := modern.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name == "harness_stop" {
			t.Errorf("harness_stop still listed after the narrowing")
		}
	}

	// The agent's run ends: its token dies, and so do its requests.
	if out, errOut, code := f.Run("restart", "agent"); code != 0 {
		t.Fatalf("restart agent: %s %s", out, errOut)
	}
	if _, _, err := goCall(ctx, modern, "harness_list", nil); err == nil {
		t.Errorf("a request with the dead run's token succeeded")
	}
	ts.wait()
}
