//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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
	f := newFleet(t, fmt.Sprintf(`%s
[harness.plain]
cmd = "sleep"
args = ["100000.4711"]
enabled = true
`, demoHarness(work, "")))
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
		Answer string `json:"answer"`
		Agent  struct {
			AgentState string `json:"agent_state"`
		} `json:"agent"`
	}
	resultJSON(t, call, &done)
	// The answer is the turn's last from the demo agent's session record.
	if done.Status != "completed" || done.Agent.AgentState != "ready" || !strings.Contains(done.Answer, "you said No") {
		t.Fatalf("harness_delegate once answered: %+v", done)
	}

	// A new harness made by the call, in a worktree of a repo: the answer
	// carries the diff stat of the turn.
	repo := t.TempDir()
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "cd "+repo+" && git add -A && git commit -qm init").CombinedOutput(); err != nil {
		t.Fatalf("commit: %v %s", err, out)
	}
	answered := make(chan string, 1)
	go func() {
		// The harness does not exist until the call makes it.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if _, _, code := f.Run("wait", "fresh", "--state", "waiting", "--timeout", "2s"); code == 0 {
				out, stderr, _ := f.Run("answer", "fresh", "Yes")
				answered <- out + stderr
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		answered <- "fresh never waited"
	}()
	out, stderr, code = f.Run("delegate", "fresh", "Edit the README", "--agent", "demo", "--repo", repo, "--worktree", "--timeout", "60s", "--json")
	var made struct {
		Status  string `json:"status"`
		Created bool   `json:"created"`
		Diff    *struct {
			Files int `json:"files"`
			Added int `json:"added"`
		} `json:"diff"`
	}
	if err := json.Unmarshal([]byte(out), &made); err != nil || code != 0 {
		t.Fatalf("delegate --agent: exit %d %v\n%s\n%s", code, err, out, stderr)
	}
	if got := <-answered; !strings.Contains(got, "answered fresh: 1. Yes") {
		t.Fatalf("answering the new harness: %s", got)
	}
	if made.Status != "completed" || !made.Created || made.Diff == nil || made.Diff.Files != 1 || made.Diff.Added == 0 {
		t.Fatalf("delegate --agent: %s", out)
	}

	// Bad input: a plain program has no turns to wait for.
	f.waitState("plain", "running")
	if _, stderr, code := f.Run("delegate", "plain", "hi"); code == 0 || !strings.Contains(stderr, "runs no known agent") {
		t.Fatalf("delegate to a plain program: exit %d %s", code, stderr)
	}
}
