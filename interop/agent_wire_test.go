//go:build interop

package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// wireRows are the agents with an MCP client, each started as in its
// story row (storyRows: entry point, keys, trust dialog) and asking before
// a tool as there. pi is not among them: it has no MCP client, by design
// (its adapter's NoWiring).
var wireRows = []storyRow{
	{spec: claudeSpec}, {spec: codexSpec}, {spec: geminiSpec},
	storyRowOf("opencode"), storyRowOf("qwen-code"), storyRowOf("copilot"), storyRowOf("cline"),
}

// storyRowOf is the story row of agent, with approval = "ask": Qwen Code's
// own default has a classifier model judge each tool call, whose
// requests would take the scripted turns.
func storyRowOf(agent string) storyRow {
	for _, r := range storyRows {
		if r.spec.agent == agent {
			r.keys = "approval = \"ask\"\n" + r.keys
			return r
		}
	}
	panic("no story row for " + agent)
}

// TestAgent_MCPWiringReachesHarness: a known agent run as a harness gets
// harness's own MCP server as "harness" without anyone configuring it
// (docs/design/agents.md, mcp_wire defaults to true). The scripted model asks each
// real agent to call harness_list through it; the call is in `harness
// calls` attributed to that harness and run, and the tool's result (the
// fleet's rows) is in the agent's next request to the model.
func TestAgent_MCPWiringReachesHarness(t *testing.T) {
	for _, row := range wireRows {
		t.Run(row.spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			began := time.Now()
			t.Cleanup(func() { t.Logf("%s took %s", row.spec.agent, time.Since(began).Round(time.Second)) })
			spec := row.spec
			if row.entry != "" {
				spec.args = append([]string{filepath.Join(interopDir, "tui", "node_modules", row.entry)}, spec.args...)
			}
			dir := t.TempDir()
			if spec.agent == "gemini" {
				dir = rootOnlyDir(t)
			}
			var keys []string
			if row.keys != "" {
				keys = append(keys, row.keys)
			}
			// Claude Code defers MCP tools behind its ToolSearch tool by
			// default; listed directly, the scripted model can call one.
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, map[string]string{"ENABLE_TOOL_SEARCH": "false"}, dir, "", keys...)
			t.Cleanup(func() {
				if t.Failed() {
					log := strings.Split(af.Log(), "\n")
					t.Logf("the daemon's log, its end:\n%s", strings.Join(log[max(0, len(log)-60):], "\n"))
				}
			})
			if row.trust != "" {
				w := af.waitState("waiting")
				if w.WaitingFor != "trust" || !slices.Contains(w.Choices, row.trust) {
					t.Fatalf("first dialog: %+v", w)
				}
				if out, errOut, code := af.Run("answer", af.name, row.trust); code != 0 {
					t.Fatalf("answer %q: exit %d: %s%s", row.trust, code, out, errOut)
				}
			}
			af.api.Script(modelapi.Turn{Text: "Hello there."})
			af.screenHas("its prompt", spec.prompt)
			af.waitState("ready")
			af.ask("Say hello")
			first := af.mainRequest(0)
			calls, err := harnessListCalls(first)
			if err != nil {
				t.Fatalf("the agent's request offers no harness tool: %v\n%.3000s", err, first.Body)
			}
			af.api.Script(append(calls, modelapi.Turn{Text: "Listed the fleet."})...)
			af.waitState("ready")
			af.ask("List the fleet")
			next := af.mainRequestApproving(1 + len(calls))
			if !strings.Contains(string(next.Body), "agent_state") {
				t.Errorf("the request after the tool call does not carry harness_list's rows: %.2000s", next.Body)
			}
			run := af.screen().RunID
			var res api.CallsResult
			af.MustJSON(&res, "calls", "--tool", "harness_list")
			found := false
			for _, c := range res.Calls {
				if c.Caller == api.CallerHarness && c.Harness == af.name && c.RunID == run && c.Outcome == "ok" {
					found = true
				}
			}
			if !found {
				t.Errorf("no ok harness_list call attributed to %s run %d: %+v", af.name, run, res.Calls)
			}
		})
	}
}

// harnessListCalls are the scripted model's turns that call harness_list
// through the tools the agent's request r offers: the tool itself when it
// is declared, else through the agent's deferred-tool bridge. Qwen Code
// declares no MCP tool up front: it names them in a reminder and offers
// tool_search to read a schema and tool_call to call it, which is what a
// model must do there.
func harnessListCalls(r modelapi.Request) ([]modelapi.Turn, error) {
	tool, err := r.ToolName("harness_list")
	if err == nil {
		return []modelapi.Turn{{Tool: tool, Args: map[string]any{}}}, nil
	}
	names := r.ToolNames()
	const deferred = "mcp__harness__harness_list"
	if !slices.Contains(names, "tool_search") || !slices.Contains(names, "tool_call") || !strings.Contains(string(r.Body), `\"`+deferred+`\"`) {
		return nil, err
	}
	return []modelapi.Turn{
		{Tool: "tool_search", Args: map[string]any{"query": "select:" + deferred}},
		{Tool: "tool_call", Args: map[string]any{"name": deferred, "arguments": map[string]any{}}},
	}, nil
}

// mainRequestApproving waits for the agent's n-th main request like
// mainRequest, approving (Enter, the first choice) any permission dialog
// the agent shows meanwhile: each agent asks before an MCP tool in its own
// way and by its own defaults.
func (af *agentFleet) mainRequestApproving(n int) modelapi.Request {
	af.T.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	approved := 0
	for time.Now().Before(deadline) {
		var found *modelapi.Request
		seen := 0
		for _, r := range af.api.Requests() {
			if r.Main {
				if seen == n {
					found = &r
					break
				}
				seen++
			}
		}
		if found != nil {
			return *found
		}
		if r := af.row(); r.AgentState == "waiting" && len(r.Choices) > 0 && approved < 3 {
			af.T.Logf("approving %q (%v)", r.Prompt, r.Choices)
			// By meaning, with whatever keys the adapter knows for it
			// (Cline's is y, not Enter).
			if out, errOut, code := af.Run("answer", af.name, r.Choices[0]); code != 0 {
				af.T.Fatalf("answer %q: exit %d: %s%s", r.Choices[0], code, out, errOut)
			}
			approved++
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, _ = af.api.WaitRequest(ctx, len(af.api.Requests()), func(r modelapi.Request) bool { return r.Main })
		cancel()
	}
	return af.mainRequest(n) // fails with what the server saw
}

// rootOnlyDir is a temp dir that root owns, on a path no one else may
// write: the only place Gemini CLI reads the system settings file that
// wires harness in from (agent.geminiWiring). Not running as root, Gemini
// cannot be wired at all, and the test says so.
func rootOnlyDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("Gemini CLI reads a system settings file only when root owns its path: the daemon must run as root to wire it")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(home, ".cache")
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "harness-interop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o022 != 0 {
			t.Skipf("%s is writable by others: Gemini CLI would not read a settings file below it", d)
		}
	}
	return dir
}

// TestAgent_AWiredGeminiTakesAPromptAfterItsTrustAnswer: a Gemini CLI
// wired to harness's MCP server shows its folder-trust dialog; answered
// with `harness answer`, it restarts, and the prompt that comes next
// reaches the model once and its answer is shown: typed by harness as the
// run's prompt (wired, Gemini draws its prompt before its trust dialog, and
// the first typing went with the process the answer replaced), or sent
// with `send --enter` once it is ready or right after the answer (while
// it restarts).
func TestAgent_AWiredGeminiTakesAPromptAfterItsTrustAnswer(t *testing.T) {
	for _, how := range []string{"the run's prompt", "sent once ready", "sent at once"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel() // each has its own daemon, HOME and model server; checkNothingLeft counts by HOME
			began := time.Now()
			t.Cleanup(func() { t.Logf("took %s", time.Since(began).Round(time.Second)) })
			const prompt = "Say something after the trust answer"
			var keys []string
			if how == "the run's prompt" {
				keys = append(keys, fmt.Sprintf("prompt = %q", prompt))
			}
			af := newAgentFleetEnv(t, geminiSpec, modelapi.AgentOptions{}, nil, rootOnlyDir(t), "", keys...)
			t.Cleanup(func() {
				if t.Failed() {
					log := strings.Split(af.Log(), "\n")
					t.Logf("the daemon's log, its end:\n%s", strings.Join(log[max(0, len(log)-60):], "\n"))
				}
			})
			af.api.Script(modelapi.Turn{Text: "Trusted and answering."})
			w := af.waitState("waiting")
			if w.WaitingFor != "trust" || len(w.Choices) == 0 || !strings.HasPrefix(w.Choices[0], "Trust folder") {
				t.Fatalf("first dialog: %+v", w)
			}
			before := len(af.api.Requests())
			af.answer(w, w.Choices[0])
			switch how {
			case "sent once ready":
				af.waitState("ready")
				af.ask(prompt)
			case "sent at once":
				af.ask(prompt)
			default:
				af.promptRequest(before, prompt)
			}
			af.screenHas("the answer", "Trusted and answering")
			var asked []string
			for _, r := range af.api.MainRequests() {
				if n := strings.Count(string(r.Body), prompt); n > 0 {
					asked = append(asked, fmt.Sprintf("%d in %s", n, r.Path))
				}
			}
			if len(asked) != 1 || !strings.HasPrefix(asked[0], "1 in") {
				t.Errorf("the prompt reached the model %v, want once", asked)
			}
		})
	}
}
