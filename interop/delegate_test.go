//go:build interop

package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// taskStep is one line of tasks.mjs.
type taskStep struct {
	I      int             `json:"i"`
	Op     string          `json:"op"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// runTasksPlan runs tasks.mjs on steps and returns one line per step.
func runTasksPlan(t *testing.T, timeout time.Duration, steps ...map[string]any) []taskStep {
	t.Helper()
	plan, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, filepath.Join(interopDir, "tasks.mjs"), string(plan))
	cmd.Dir = interopDir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got []taskStep
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s taskStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("tasks.mjs said %q: %v", sc.Text(), err)
		}
		t.Logf("step %d %s: ok=%v %s%s", s.I, s.Op, s.OK, errClip(s.Result), s.Error)
		got = append(got, s)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tasks.mjs: %v (after %d of %d steps)", err, len(got), len(steps))
	}
	if len(got) != len(steps) {
		t.Fatalf("tasks.mjs answered %d of %d steps", len(got), len(steps))
	}
	return got
}

func errClip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func (s taskStep) must(t *testing.T, v any) {
	t.Helper()
	if !s.OK {
		t.Fatalf("step %d %s failed: %s", s.I, s.Op, s.Error)
	}
	if err := json.Unmarshal(s.Result, v); err != nil {
		t.Fatalf("step %d %s: %s: %v", s.I, s.Op, s.Result, err)
	}
}

// TestTS_DelegateToClaudeCodeAsATask: the TypeScript SDK's tasks client
// delegates to a real Claude Code (offline, against the scripted model
// server) over the HTTP endpoint. A plain call blocks and returns the
// agent's answer. A task goes working → input_required (the agent asks
// to run a command; the elicitation names it) → answered through the
// elicitation → completed with the answer, and the command ran. Another
// token cannot see, list or cancel the task. A second task waiting on its
// permission prompt is cancelled: the run stops and its command never
// runs.
func TestTS_DelegateToClaudeCodeAsATask(t *testing.T) {
	spec := agentSpec{"claude-code", "@anthropic-ai/claude-code", "claude", nil, "❯"}
	tokDir := t.TempDir()
	rf := newRunFleet(t, spec, `approval = "ask"
mcp_wire = false
`+tokenHarness("other", tokDir, `mcp_allow = ["read", "write", "input"]`)+`
[daemon]
mcp_http = "127.0.0.1:0"
mcp_http_operator_allow = ["read", "write", "input"]
`)
	rf.api.Script(
		modelapi.Turn{Text: "Hello from the delegated agent."},
		modelapi.Turn{Text: "Let me make the file.", Shell: "touch made-by-agent"},
		modelapi.Turn{Text: "Made the file for you."},
		modelapi.Turn{Text: "Let me make another.", Shell: "touch never-made"},
	)
	if out, errOut, code := rf.Run("start", "a"); code != 0 {
		t.Fatalf("start: %s%s", out, errOut)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log := strings.Split(rf.Log(), "\n")
			t.Logf("the daemon's log, its end:\n%s", strings.Join(log[max(0, len(log)-60):], "\n"))
		}
	})
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	rf.MustJSON(&info, "daemon-info")
	tok, _, code := rf.Run("--state-dir", rf.State, "mcp", "token")
	if code != 0 {
		t.Fatalf("harness mcp token: exit %d", code)
	}
	httpConn := map[string]any{"type": "http", "url": info.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + strings.TrimSpace(tok)}}
	// Another caller: another token (a harness's) with the same grant.
	otherConn := map[string]any{"type": "http", "url": info.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + rf.harnessToken(tokDir, "other")}}
	start := time.Now()
	steps := runTasksPlan(t, 150*time.Second,
		map[string]any{"op": "connect", "conn": "h", "transport": httpConn, "choice": "Yes"},
		map[string]any{"op": "connect", "conn": "o", "transport": otherConn},
		map[string]any{"op": "call", "conn": "h", "name": "harness_delegate", "args": map[string]any{"name": "a", "prompt": "Say hello.", "timeout_s": 90}},
		map[string]any{"op": "task", "conn": "h", "name": "harness_delegate", "args": map[string]any{"name": "a", "prompt": "Make the file made-by-agent."}, "ttl": 90000},
		map[string]any{"op": "start", "conn": "h", "name": "harness_delegate", "args": map[string]any{"name": "a", "prompt": "Make one more file."}, "ttl": 90000},
		map[string]any{"op": "waitStatus", "conn": "h", "task": 4, "status": "input_required"},
		map[string]any{"op": "get", "conn": "o", "task": 4},
		map[string]any{"op": "cancel", "conn": "o", "task": 4},
		map[string]any{"op": "list", "conn": "o"},
		map[string]any{"op": "cancel", "conn": "h", "task": 4},
		map[string]any{"op": "list", "conn": "h"},
	)
	t.Logf("the plan took %s", time.Since(start).Round(time.Millisecond))

	var conn struct {
		Capabilities struct {
			Tasks map[string]any `json:"tasks"`
		} `json:"capabilities"`
	}
	steps[0].must(t, &conn)
	if conn.Capabilities.Tasks["requests"] == nil {
		t.Fatalf("the server declares no tasks: %s", steps[0].Result)
	}

	var blocking toolResult
	steps[2].must(t, &blocking)
	var dr api.DelegateResult
	if blocking.IsError || json.Unmarshal(blocking.StructuredContent, &dr) != nil || dr.Status != api.DelegateCompleted || dr.Answer != "Hello from the delegated agent." {
		t.Fatalf("blocking delegate: %s", steps[2].Result)
	}

	var task struct {
		TaskID       string     `json:"taskId"`
		Statuses     []string   `json:"statuses"`
		InputMessage string     `json:"inputMessage"`
		Result       toolResult `json:"result"`
		Error        string     `json:"error"`
		Asked        []struct {
			Message string         `json:"message"`
			Meta    map[string]any `json:"meta"`
		} `json:"asked"`
	}
	steps[3].must(t, &task)
	// The SDK's stream takes the result from the tasks/result it sends on
	// input_required, so completed is seen in the owner's list below.
	if task.Error != "" || !slices.Equal(task.Statuses, []string{"working", "input_required"}) {
		t.Fatalf("task statuses %v, error %q", task.Statuses, task.Error)
	}
	if len(task.Asked) != 1 || !strings.Contains(task.Asked[0].Message, "touch made-by-agent") {
		t.Fatalf("elicitations %+v", task.Asked)
	}
	if rel, _ := task.Asked[0].Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != task.TaskID {
		t.Fatalf("the elicitation is not tied to the task: %+v", task.Asked[0].Meta)
	}
	if !strings.Contains(task.InputMessage, "touch made-by-agent") {
		t.Errorf("input_required message %q does not name the command", task.InputMessage)
	}
	if json.Unmarshal(task.Result.StructuredContent, &dr) != nil || dr.Status != api.DelegateCompleted || dr.Answer != "Made the file for you." {
		t.Fatalf("task result %+v", task.Result)
	}
	if _, err := os.Stat(filepath.Join(rf.work, "made-by-agent")); err != nil {
		t.Fatalf("the answered command did not run: %v", err)
	}

	for _, i := range []int{6, 7} {
		if steps[i].OK || !strings.Contains(steps[i].Error, "not found") {
			t.Fatalf("another caller's %s: ok=%v %s", steps[i].Op, steps[i].OK, steps[i].Error)
		}
	}
	var otherList struct {
		Tasks []any `json:"tasks"`
	}
	steps[8].must(t, &otherList)
	if len(otherList.Tasks) != 0 {
		t.Fatalf("another caller lists %s", steps[8].Result)
	}
	var cancelled struct {
		Status string `json:"status"`
	}
	steps[9].must(t, &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("cancel: %s", steps[9].Result)
	}
	var mine struct {
		Tasks []struct {
			TaskID, Status string
		} `json:"tasks"`
	}
	steps[10].must(t, &mine)
	if len(mine.Tasks) != 2 || mine.Tasks[0].Status != "completed" || mine.Tasks[1].Status != "cancelled" {
		t.Fatalf("owner's list %s", steps[10].Result)
	}
	rf.WaitFor("the cancelled run to stop", 20*time.Second, func() bool {
		var rows []api.UnitInfo
		rf.MustJSON(&rows, "list")
		for _, r := range rows {
			if r.Name == "a" {
				return r.PID == 0
			}
		}
		return false
	})
	if _, err := os.Stat(filepath.Join(rf.work, "never-made")); err == nil {
		t.Fatal("the cancelled task's command ran")
	}
}
