//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScenario_DelegatingToTheDemoAgentWaitsForItsTurn: `harness
// delegate` types the prompt to a ready agent and blocks while the turn
// runs; when the agent stops to ask a person, a short timeout answers
// timed_out with the question and its choices (exit 124), the agent
// goes on waiting; answered, the next delegation completes. MCP
// harness_delegate does the same for a caller with the write grant.
func TestScenario_DelegatingToTheDemoAgentWaitsForItsTurn(t *testing.T) {
	work := t.TempDir()
	readme := filepath.Join(work, "README.md")
	if err := os.WriteFile(readme, []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.demo]
cmd = %q
args = ["demo-agent", "--step", "200ms"]
agent = "demo"
workdir = %q
enabled = true

[harness.plain]
cmd = "sleep"
args = ["100000.4711"]
enabled = true
`, harnessBin, work))
	f.waitAgent("demo", "ready")

	// The agent asks before it edits: the call times out on the question.
	out, stderr, code := f.Run("delegate", "demo", "Edit the README", "--timeout", "5s", "--json")
	if code != 124 {
		t.Fatalf("delegate while the agent asks: exit %d, want 124\n%s\n%s", code, out, stderr)
	}
	var res struct {
		Status string `json:"status"`
		Typed  bool   `json:"typed"`
		Agent  struct {
			AgentState string   `json:"agent_state"`
			Prompt     string   `json:"prompt"`
			Choices    []string `json:"choices"`
		} `json:"agent"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("delegate --json: %v\n%s", err, out)
	}
	if res.Status != "timed_out" || !res.Typed || res.Agent.AgentState != "waiting" || res.Agent.Prompt != "Allow edit to README.md?" || len(res.Agent.Choices) != 2 {
		t.Fatalf("delegate while the agent asks: %+v", res)
	}
	f.MustRun("answer", "demo", "Yes")
	f.waitAgent("demo", "ready")
	if b, _ := os.ReadFile(readme); !strings.Contains(string(b), "written by the harness demo agent") {
		t.Fatalf("README after Yes:\n%s", b)
	}

	// Over MCP, with the answer given from elsewhere while the call waits.
	s := f.mcpSession("", true, nil)
	go func() {
		f.waitAgent("demo", "waiting")
		f.MustRun("answer", "demo", "No")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "harness_delegate", Arguments: map[string]any{"name": "demo", "prompt": "Edit it again", "timeout_s": 45}})
	if err != nil || call.IsError {
		t.Fatalf("harness_delegate: %v %+v", err, call)
	}
	var done struct {
		Status string `json:"status"`
		Note   string `json:"note"`
		Agent  struct {
			AgentState string `json:"agent_state"`
		} `json:"agent"`
	}
	resultJSON(t, call, &done)
	if done.Status != "completed" || done.Agent.AgentState != "ready" || !strings.Contains(done.Note, "transcript") {
		t.Fatalf("harness_delegate once answered: %+v", done)
	}

	// Bad input: a plain program has no turns to wait for.
	f.waitState("plain", "running")
	if _, stderr, code := f.Run("delegate", "plain", "hi"); code == 0 || !strings.Contains(stderr, "runs no known agent") {
		t.Fatalf("delegate to a plain program: exit %d %s", code, stderr)
	}
}
