//go:build interop

package interop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// TestAgent_HooksOfCodexAndGemini: the hooks harness installs in the real
// Codex (its notify program, called at the end of every turn) and Gemini
// CLI (its settings hooks) tell harness of each turn: with no `turns`
// call, the run record gets the agent's session, and after a turn that ran
// a shell command, the tool call with its outcome and the turn's tokens,
// read from the transcript the hook named or found.
func TestAgent_HooksOfCodexAndGemini(t *testing.T) {
	for _, spec := range []agentSpec{codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			dir := t.TempDir()
			if spec.agent == "gemini" {
				dir = rootOnlyDir(t)
			}
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, nil, dir, "", "mcp_wire = false")
			af.api.Script(modelapi.Turn{Text: "First answer.", Usage: modelapi.Usage{Input: 111, Output: 22}},
				modelapi.Turn{Shell: "touch made-by-agent"}, modelapi.Turn{Text: "Made it."}) // 5 output tokens a turn unless told
			af.screenHas("its prompt", spec.prompt)
			run := af.screen().RunID
			af.ask("Say hello")
			af.mainRequest(0)
			r := af.waitRunFor(run, "the session from the agent's hook", func(r api.Run) bool { return r.SessionID != "" && r.Tokens.Output == 22 })
			if len(r.ToolCalls) != 0 {
				t.Errorf("tool calls before any: %+v", r.ToolCalls)
			}
			af.waitState("ready")
			af.ask("Make the file")
			af.mainRequestApproving(2)
			r = af.waitRunFor(run, "the tool call from the agent's hook", func(r api.Run) bool {
				return len(r.ToolCalls) == 1 && r.ToolCalls[0].Outcome == "ok" && r.Tokens.Output == 32
			})
			if name := map[string]string{"codex": "exec_command", "gemini": "run_shell_command"}[spec.agent]; r.ToolCalls[0].Name != name {
				t.Errorf("tool call %+v, want %s", r.ToolCalls[0], name)
			}
			if _, err := os.Stat(filepath.Join(af.work, "made-by-agent")); err != nil {
				t.Errorf("the approved command did not run: %v", err)
			}
		})
	}
}

// TestAgent_TheLoopGuardSeesCodexAndGeminiToolCalls: loop_guard = 3 ends
// the run of the real Codex and Gemini CLI, scripted to run the same
// shell command again and again without asking (approval = "auto"), with
// outcome loop and the call named: Gemini's BeforeTool hook tells each
// call as it comes, Codex's end-of-turn notify has the turn's calls read
// from its transcript.
func TestAgent_TheLoopGuardSeesCodexAndGeminiToolCalls(t *testing.T) {
	for _, spec := range []agentSpec{codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			dir := t.TempDir()
			spec.args = nil
			if spec.agent == "gemini" {
				dir = rootOnlyDir(t)
			} else {
				spec.args = []string{"--no-daemon"}
			}
			af := newAgentFleetEnv(t, spec, modelapi.AgentOptions{Trusted: true}, nil, dir, "",
				"mcp_wire = false", `approval = "auto"`, "loop_guard = 3", `restart = "no"`)
			for range 6 {
				af.api.Script(modelapi.Turn{Shell: "echo looping"})
			}
			af.screenHas("its prompt", spec.prompt)
			run := af.screen().RunID
			af.ask("Check the status.")
			r := af.waitRunFor(run, "the loop guard's end", func(r api.Run) bool { return r.Outcome != "" })
			name := map[string]string{"codex": "exec_command", "gemini": "run_shell_command"}[spec.agent]
			if r.Outcome != api.RunLoop || !strings.Contains(r.Note, "3 times in a row") || !strings.Contains(r.Note, name) ||
				!strings.Contains(r.Note, "echo looping") {
				t.Fatalf("run %+v\nlog:\n%s", r, af.Log())
			}
		})
	}
}

// waitRunFor polls `harness runs` until run satisfies ok (2 minutes).
func (af *agentFleet) waitRunFor(id uint64, what string, ok func(api.Run) bool) api.Run {
	af.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	af.T.Fatalf("%s: run %d never got there: %+v\nscreen %s", what, id, last, af.lastScreen())
	return last
}
