//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/telemetry/otlptest"
)

// rpc reads the bridge's lines until the answer to id, handing the
// server's requests to onRequest.
func (b *bridgeProc) rpc(id int, onRequest func(map[string]json.RawMessage)) map[string]json.RawMessage {
	b.t.Helper()
	for {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(b.line()), &m); err != nil {
			b.t.Fatalf("not JSON from harness mcp: %v", err)
		}
		if _, ok := m["method"]; ok {
			if _, isCall := m["id"]; isCall && onRequest != nil {
				onRequest(m)
			}
			continue
		}
		if string(m["id"]) == fmt.Sprint(id) {
			return m
		}
	}
}

type e2eTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// taskGet polls tasks/get on b until the task has status.
func (b *bridgeProc) taskGet(id *int, task, status string) e2eTask {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		*id++
		b.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/get","params":{"taskId":%q}}`, *id, task))
		var got e2eTask
		if err := json.Unmarshal(b.rpc(*id, nil)["result"], &got); err != nil {
			b.t.Fatal(err)
		}
		if got.Status == status {
			return got
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("task %s is %s (%s), want %s", task, got.Status, got.StatusMessage, status)
		}
		time.Sleep(100 * time.Millisecond) // polling is the protocol's way
	}
}

// TestScenario_ADelegationTaskAsksTheCallerAndTheTraceLinksIt: over
// `harness mcp`, a session attributed to a harness granted write and
// input delegates to the demo agent as an MCP task: working, then
// input_required with the agent's question; tasks/result brings it as an
// elicitation tied to the task, whose Yes reaches the agent; the task
// completes, the file is edited. Another harness's token does not find
// the task. The agent's turn span links to the delegating call's span, in
// the trace the caller sent.
func TestScenario_ADelegationTaskAsksTheCallerAndTheTraceLinksIt(t *testing.T) {
	rcv := otlptest.New(t)
	work, tokdir := t.TempDir(), t.TempDir()
	readme := filepath.Join(work, "README.md")
	if err := os.WriteFile(readme, []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[telemetry]
otlp_endpoint = %q
%s%s%s`, rcv.URL, demoHarness(work, ""),
		tokenHarness("boss", tokdir, `mcp_allow = ["read", "write", "input"]`),
		tokenHarness("other", tokdir, `mcp_allow = ["read", "write", "input"]`)))
	f.waitAgent("demo", "ready")

	boss := startBridge(t, f.Socket, "HARNESS_MCP_TOKEN="+token(t, filepath.Join(tokdir, "boss.token")))
	boss.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"tasks":{}},"clientInfo":{"name":"e2e","version":"1"}}}`, initializedLine)
	if init := string(boss.rpc(0, nil)["result"]); !strings.Contains(init, `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize declares no tasks: %s", init)
	}
	const callerTP = "00-7e57c0de7e57c0de7e57c0de7e57c0de-b7ad6b7169203331-01"
	boss.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"harness_delegate","arguments":{"name":"demo","prompt":"Edit the README"},"task":{"ttl":60000},"_meta":{"traceparent":"` + callerTP + `"}}}`)
	var created struct {
		Task e2eTask `json:"task"`
	}
	if err := json.Unmarshal(boss.rpc(1, nil)["result"], &created); err != nil || created.Task.Status != "working" {
		t.Fatalf("tools/call as a task: %v %+v", err, created)
	}
	task, id := created.Task.TaskID, 1
	waiting := boss.taskGet(&id, task, "input_required")
	if !strings.Contains(waiting.StatusMessage, "Allow edit to README.md?") {
		t.Fatalf("input_required says %q", waiting.StatusMessage)
	}

	other := startBridge(t, f.Socket, "HARNESS_MCP_TOKEN="+token(t, filepath.Join(tokdir, "other.token")))
	other.initialize()
	other.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":%q}}`, task))
	if e := string(other.rpc(1, nil)["error"]); !strings.Contains(e, "task not found") {
		t.Fatalf("another token's tasks/get: %s", e)
	}

	id++
	boss.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":%q}}`, id, task))
	asked := 0
	res := boss.rpc(id, func(req map[string]json.RawMessage) {
		asked++
		if string(req["method"]) != `"elicitation/create"` || !strings.Contains(string(req["params"]), "Allow edit to README.md?") ||
			!strings.Contains(string(req["params"]), `"io.modelcontextprotocol/related-task":{"taskId":"`+task+`"}`) {
			t.Errorf("asked %s %s", req["method"], req["params"])
		}
		boss.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"choice":"Yes"}}}`, req["id"]))
	})
	var out struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res["result"], &out); err != nil || out.IsError || out.StructuredContent.Status != "completed" || asked != 1 {
		t.Fatalf("tasks/result after %d questions: %v %s", asked, err, res["result"])
	}
	boss.taskGet(&id, task, "completed")
	if b, _ := os.ReadFile(readme); !strings.Contains(string(b), "written by the harness demo agent") {
		t.Fatalf("README after the answer:\n%s", b)
	}

	f.MustRun("stop", "demo") // a turn's span is sent when it ends; the run's at its end
	f.WaitFor("the demo's turn spans", 30*time.Second, func() bool { return len(rcv.Spans("turn demo")) > 0 })
	linked := 0
	for _, turn := range rcv.Spans("turn demo") {
		for _, l := range turn.Links {
			if otlptest.HexID(l.TraceId) == callerTP[3:35] {
				linked++
			}
		}
	}
	if linked != 1 {
		t.Fatalf("turns linked to the caller's trace: %d, want 1", linked)
	}
}
