//go:build interop

package interop

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// turnsSecret is planted in the harness's env_file and typed into the
// agent: the agent's transcript holds it, harness never shows it.
const turnsSecret = "swordfish-7c1e-correct-horse-battery"

// TestAgent_TurnsOfRealAgents: after a scripted conversation (an answer
// with known token counts, then a shell command approved and run, then a
// last answer), `harness turns` shows, from each real agent's own
// transcript, its session id, the model the agent asked the model server
// for, the token totals the server sent, and the turns with the tool call
// and its outcome; the secret of the env_file, typed into a prompt, is
// masked in every form of the answer. The run record (`harness runs`)
// carries the session, model and tokens too; for Claude Code they arrive
// through its hooks (SessionStart, Stop) before anyone asks for turns.
func TestAgent_TurnsOfRealAgents(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			t.Parallel() // each agent has its own daemon, model server, HOME and workdir
			dir := t.TempDir()
			envFile := filepath.Join(dir, "secrets.env")
			if err := os.WriteFile(envFile, []byte("TURNS_SECRET="+turnsSecret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// The harness's own price table (prices) covers the models
			// the scripted server reports, which no adapter's table does
			// (gpt-5 overridden).
			price := `{ input = 2, output = 10, cache_read = 0.5, cache_write = 4 }`
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, nil, dir, envFile,
				`prices = { "claude-opus-5" = `+price+`, "gpt-5" = `+price+`, "gemini-3" = `+price+` }`)
			af.api.Script(modelapi.Turn{Text: "First answer.", Usage: modelapi.Usage{Input: 111, Output: 22, CacheRead: 33, CacheWrite: 44}},
				modelapi.Turn{Shell: "touch made-by-agent"}, modelapi.Turn{Text: "Made it."})
			af.screenHas("its prompt", spec.prompt)
			af.ask("Remember " + turnsSecret)
			first := af.mainRequest(0)
			af.waitState("ready")
			af.ask("Make the file")
			af.mainRequestApproving(2)
			af.waitState("ready")
			model := requestModel(first)
			want := api.Tokens{Input: 131, Output: 32, CacheRead: 33, CacheWrite: 44}
			if spec.agent != "claude-code" {
				want.CacheWrite = 0 // Codex and Gemini CLI keep no cache writes apart
			}
			run := af.screen().RunID

			if spec.agent == "claude-code" {
				// Claude Code's hooks put its session on the run, and its
				// Stop hook the transcript's totals, without a turns call.
				r := af.waitRun(run, func(r api.Run) bool { return r.SessionID != "" && r.Tokens == want })
				if r.Model != model {
					t.Errorf("run from the hooks: model %q, want %q", r.Model, model)
				}
			}

			var res api.TurnsResult
			af.MustJSON(&res, "turns", af.name)
			if res.SessionID == "" || res.Model != model || res.Tokens != want || res.RunID != run || res.Agent != spec.agent {
				t.Errorf("turns: session %q model %q (want %q) tokens %+v (want %+v) run %d/%d agent %s",
					res.SessionID, res.Model, model, res.Tokens, want, res.RunID, run, res.Agent)
			}
			wantCost := (float64(want.Input)*2 + float64(want.Output)*10 + float64(want.CacheRead)*0.5 + float64(want.CacheWrite)*4) / 1e6
			if res.CostUSD == nil || math.Abs(*res.CostUSD-wantCost) > 1e-12 {
				t.Errorf("turns cost_usd %v, want %v from the harness's prices (model %s)", res.CostUSD, wantCost, res.Model)
			}
			var texts []string
			var tools []api.ToolCallInfo
			for _, turn := range res.Turns {
				texts = append(texts, turn.Role+": "+turn.Text)
				tools = append(tools, turn.ToolCalls...)
			}
			joined := strings.Join(texts, "\n")
			for _, w := range []string{"user: Remember [masked]", "assistant: First answer.", "user: Make the file", "assistant: Made it."} {
				if !strings.Contains(joined, w) {
					t.Errorf("turns lack %q:\n%s", w, joined)
				}
			}
			if len(tools) != 1 || tools[0].Outcome != "ok" || !strings.Contains(tools[0].Input, "touch made-by-agent") {
				t.Errorf("tool calls %+v", tools)
			}
			out, errOut, code := af.Run("turns", af.name)
			jsonOut, _, _ := af.Run("turns", af.name, "--json")
			if code != 0 || !strings.Contains(out, "Made it.") || !strings.Contains(out, "session "+res.SessionID) {
				t.Errorf("turns text: exit %d\n%s%s", code, out, errOut)
			}
			for _, o := range []string{out, jsonOut} {
				if strings.Contains(o, turnsSecret) {
					t.Errorf("the env_file secret is shown:\n%s", o)
				}
			}
			r := af.waitRun(run, func(r api.Run) bool { return r.SessionID == res.SessionID && r.Tokens == want })
			if r.Model != model || math.Abs(r.CostUSD-wantCost) > 1e-12 {
				t.Errorf("run record: model %q (want %q), cost_usd %v (want %v)", r.Model, model, r.CostUSD, wantCost)
			}
			// The run carries the tool call with its outcome: in runs
			// --json, and describe's current run (--json and text).
			if len(tools) == 1 && (len(r.ToolCalls) != 1 || r.ToolCalls[0] != (api.RunToolCall{Name: tools[0].Name, Outcome: "ok"})) {
				t.Errorf("runs --json tool calls %+v, want [%s ok]", r.ToolCalls, tools[0].Name)
			}
			var d api.Description
			af.MustJSON(&d, "describe", af.name)
			if d.CurrentRun == nil || len(d.CurrentRun.ToolCalls) != 1 || d.CurrentRun.ToolCalls[0].Outcome != "ok" {
				t.Errorf("describe --json current run %+v", d.CurrentRun)
			}
			if out, _, _ := af.Run("describe", af.name); len(tools) == 1 && !strings.Contains(out, "tool calls:     "+tools[0].Name+" ok") {
				t.Errorf("describe text lacks the tool call:\n%s", out)
			}

			if spec.agent == "claude-code" {
				// A scripted API error is the run's last API error, read
				// from the transcript (a 429: Claude Code retries other
				// errors, or falls back to a request without streaming,
				// and the fallback gets an answer). A 429 is also a usage
				// limit: the harness stops, held, and the run has ended,
				// so describe has no current run to show it on.
				af.api.Script(modelapi.Turn{Error: &modelapi.Error{Status: 429, Message: "scripted bad request " + turnsSecret}})
				af.ask("Fail now")
				af.mainRequest(3)
				// No hook tells of the failed turn: a turns call reads the
				// transcript and puts what it says on the run.
				if res := af.waitTurns(func(res api.TurnsResult) bool { return res.LastAPIError != "" }); !strings.Contains(res.LastAPIError, "scripted bad request [masked]") {
					t.Errorf("turns last API error %q", res.LastAPIError)
				}
				r := af.waitRun(run, func(r api.Run) bool { return r.LastAPIError != "" })
				if !strings.Contains(r.LastAPIError, "scripted bad request [masked]") || strings.Contains(r.LastAPIError, turnsSecret) {
					t.Errorf("runs --json last API error %q", r.LastAPIError)
				}
				if len(r.ToolCalls) != 1 {
					t.Errorf("runs --json tool calls after the error %+v", r.ToolCalls)
				}
			}
		})
	}
}

// requestModel is the model an agent asked the model server for: the
// body's model (Anthropic, OpenAI) or the path's (Gemini).
func requestModel(r modelapi.Request) string {
	if m, ok := r.JSON()["model"].(string); ok && m != "" {
		return m
	}
	if _, rest, ok := strings.Cut(r.Path, "/models/"); ok {
		m, _, _ := strings.Cut(rest, ":")
		return m
	}
	return ""
}

// waitRun polls `harness runs` until run satisfies ok (10 s).
func (af *agentFleet) waitRun(id uint64, ok func(api.Run) bool) api.Run {
	af.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last api.Run
	for ctx.Err() == nil {
		var rs []api.Run
		af.MustJSON(&rs, "runs", af.name)
		for _, r := range rs {
			if r.ID == id {
				last = r
				if ok(r) {
					return r
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	af.T.Fatalf("run %d never got there: %+v", id, last)
	return last
}

// waitTurns polls `harness turns --json` until ok (30 s): the agent
// writes its transcript after it shows its answer.
func (af *agentFleet) waitTurns(ok func(api.TurnsResult) bool) api.TurnsResult {
	af.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last api.TurnsResult
	for ctx.Err() == nil {
		af.MustJSON(&last, "turns", af.name)
		if ok(last) {
			return last
		}
		time.Sleep(200 * time.Millisecond)
	}
	af.T.Fatalf("turns never got there: %+v", last)
	return last
}
