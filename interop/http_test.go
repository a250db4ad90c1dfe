//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTS_StreamableHTTP drives the HTTP endpoint with the TypeScript SDK's
// StreamableHTTPClientTransport: list and call tools, list and get prompts.
func TestTS_StreamableHTTP(t *testing.T) {
	prompts := t.TempDir()
	os.WriteFile(filepath.Join(prompts, "review.md"), []byte("---\ndescription: Review\narguments:\n  - name: topic\n    required: true\n---\nReview {{topic}} carefully.\n"), 0o600)
	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[mcp.prompts]\npaths = [%q]\n%s", prompts, facadeConfig))
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	tok, _, code := f.Run("--state-dir", f.State, "mcp", "token")
	if code != 0 || len(strings.TrimSpace(tok)) < 32 {
		t.Fatalf("harness mcp token: %d %q", code, tok)
	}
	transport := map[string]any{"type": "http", "url": info.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + strings.TrimSpace(tok)}}
	c, steps := runTS(t,
		connectStep("h", transport),
		opStep("h", "listTools"),
		opStep("h", "callTool", "name", "harness_list"),
		opStep("h", "callTool", "name", "harness_stop", "args", map[string]any{"name": "sleeper"}),
		opStep("h", "listPrompts"),
		opStep("h", "getPrompt", "name", "review", "args", map[string]string{"topic": "the HTTP path"}),
	)
	var conn struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	c.must(steps[0], &conn)
	if conn.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q over HTTP", conn.ProtocolVersion)
	}
	var listed struct{ Tools []tool }
	c.must(steps[1], &listed)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, readTools) {
		t.Fatalf("operator over HTTP (read-only by default) lists %v", names)
	}
	var list toolResult
	c.must(steps[2], &list)
	if list.IsError || !strings.Contains(list.text(), `"sleeper"`) {
		t.Fatalf("harness_list over HTTP: %+v", list)
	}
	var stop toolResult
	c.must(steps[3], &stop)
	if !stop.IsError || !strings.Contains(string(stop.StructuredContent), "not_permitted") {
		t.Fatalf("harness_stop over HTTP with a read-only token: %+v", stop)
	}
	var ps struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	c.must(steps[4], &ps)
	if len(ps.Prompts) != 1 || ps.Prompts[0].Name != "review" {
		t.Fatalf("prompts over HTTP: %s", steps[4].Result)
	}
	var got struct {
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	c.must(steps[5], &got)
	if len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.Text, "Review the HTTP path carefully.") {
		t.Fatalf("prompt over HTTP: %s", steps[5].Result)
	}

	// The call log has the TypeScript client's three calls, as the operator's.
	var log struct {
		Calls []struct {
			Session, Transport, Caller, Kind, Tool, Outcome string
		} `json:"calls"`
	}
	f.MustJSON(&log, "calls")
	var rows []string
	for _, r := range log.Calls {
		rows = append(rows, strings.Join([]string{r.Transport, r.Caller, r.Kind, r.Tool, r.Outcome}, " "))
		if r.Session == "" || r.Session != log.Calls[0].Session {
			t.Errorf("session ids %+v", log.Calls)
		}
	}
	if want := []string{"http operator tool harness_list ok", "http operator tool harness_stop not_permitted", "http operator prompt review ok"}; !slices.Equal(rows, want) {
		t.Errorf("calls: %q, want %q", rows, want)
	}
}

// TestTS_HarnessLaunchesTheBridgeAndIsAttributed runs, as a harness's own
// command, the TypeScript client that launches `harness mcp` the way an
// agent CLI would. The bridge presents the harness's injected token, so the
// session carries that harness's mcp_allow (write) without --allow-control.
func TestTS_HarnessLaunchesTheBridgeAndIsAttributed(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "run", "harness.sock")
	plan, _ := json.Marshal(map[string]any{"steps": []map[string]any{
		connectStep("a", map[string]any{"type": "stdio", "command": harnessBin, "args": []string{"mcp", "--socket", socket}}),
		opStep("a", "listTools", "id", "tools"),
		opStep("a", "callTool", "name", "harness_restart", "args", map[string]any{"name": "sibling"}, "id", "restart"),
		opStep("a", "close"),
	}})
	config := fmt.Sprintf(`
[harness.sibling]
cmd = "sleep"
args = ["100000"]
enabled = true

[harness.agent]
cmd = %q
args = [%q, '%s']
workdir = %q
restart = "no"
mcp_allow = ["read", "write"]
`, nodeBin, filepath.Join(interopDir, "client.mjs"), plan, interopDir)
	f := newFleetAt(t, dir, config)
	sibling := f.waitRunning("sibling")
	f.Run("start", "agent")
	var raw struct {
		Text string `json:"text"`
	}
	f.WaitFor("the agent's MCP client to finish", 60*time.Second, func() bool {
		f.MustJSON(&raw, "logs", "agent", "--raw")
		return strings.Contains(raw.Text, `"id":"restart"`)
	})
	if !strings.Contains(raw.Text, `"name":"harness_restart"`) {
		t.Fatalf("the harness's own session does not list write tools: it is not attributed\n%s", raw.Text)
	}
	if strings.Contains(raw.Text, `"isError":true`) {
		t.Fatalf("harness_restart from the attributed session failed\n%s", raw.Text)
	}
	f.WaitFor("the sibling to be restarted", 20*time.Second, func() bool {
		u := f.waitRunning("sibling")
		return u.PID != sibling.PID
	})
}
