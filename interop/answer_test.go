//go:build interop

package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// TestAgent_AnMCPClientAnswersClaudeCodesPermissionPrompt: a real Claude
// Code asks to run a command; a TypeScript SDK session granted input
// (through `harness mcp` with a harness's token) sees harness_answer, is
// told the choices for one Claude Code does not offer, and approves by
// text; the command runs (the file appears), the agent is ready again and
// a second answer is not_waiting, through MCP and through the CLI. A
// session granted read and write does not see harness_answer and is
// refused it.
func TestAgent_AnMCPClientAnswersClaudeCodesPermissionPrompt(t *testing.T) {
	af := newAgentFleet(t, claudeSpec, modelapi.AgentOptions{Trusted: true})
	dir := t.TempDir()
	cfg, err := os.ReadFile(af.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, tokenTable("ops", dir, `["read", "input"]`)+tokenTable("rw", dir, `["read", "write"]`)...)
	if err := os.WriteFile(af.Config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := af.Run("reload"); code != 0 {
		t.Fatalf("reload: exit %d: %s%s", code, out, errOut)
	}
	af.Run("start", "ops", "rw")
	bridge := func(tokenOf string) map[string]any {
		tr := af.bridge()
		tr["env"] = map[string]string{"HARNESS_SOCKET": "", "HARNESS_MCP_TOKEN": readToken(t, filepath.Join(dir, tokenOf+".token"))}
		return tr
	}

	af.waitState("ready")
	// Not waiting yet: the CLI says so with its code.
	out, _, code := af.Run("answer", af.name, "Yes", "--json")
	if code == 0 || !strings.Contains(out, `"code":"not_waiting"`) {
		t.Fatalf("answer to a ready agent: exit %d: %s", code, out)
	}

	af.api.Script(modelapi.Turn{Shell: "touch made-by-mcp"}, modelapi.Turn{Text: "Made the file."})
	af.ask("Make the file")
	w := af.waitState("waiting")
	if w.WaitingFor != "permission" || !strings.Contains(w.Prompt, "touch made-by-mcp") || !slices.Contains(w.Choices, "Yes") {
		t.Fatalf("permission: %+v\nscreen %s", w, af.lastScreen())
	}
	c, steps := runTS(t,
		connectStep("rw", bridge("rw")),
		opStep("rw", "listTools"),
		opStep("rw", "callTool", "name", "harness_answer", "args", map[string]any{"name": af.name, "choice": "Yes"}),
		connectStep("in", bridge("ops")),
		opStep("in", "listTools"),
		opStep("in", "callTool", "name", "harness_answer", "args", map[string]any{"name": af.name, "choice": "Maybe"}),
		opStep("in", "callTool", "name", "harness_answer", "args", map[string]any{"name": af.name, "choice": "Yes"}),
	)
	names := func(s step) []string {
		var listed struct{ Tools []tool }
		c.must(s, &listed)
		var out []string
		for _, tl := range listed.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(steps[1]); slices.Contains(got, "harness_answer") {
		t.Errorf("a session granted read and write lists harness_answer: %v", got)
	}
	if got := names(steps[4]); !slices.Contains(got, "harness_answer") {
		t.Fatalf("a session granted read and input lists %v", got)
	}
	code2 := func(s step) (string, string) {
		var r toolResult
		c.must(s, &r)
		var body struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if r.IsError {
			_ = json.Unmarshal(r.StructuredContent, &body)
		}
		return body.Code, body.Message
	}
	if code, msg := code2(steps[2]); code != "not_permitted" {
		t.Errorf("harness_answer without input: %s %s\n%s", code, msg, c.transcript())
	}
	if code, msg := code2(steps[5]); code != "invalid_argument" || !strings.Contains(msg, `does not offer "Maybe": its choices are 1 "Yes", 2 "Yes, and`) {
		t.Errorf("a choice Claude Code does not offer: %s %s\n%s", code, msg, c.transcript())
	}
	var r toolResult
	c.must(steps[6], &r)
	var res answerResult
	if r.IsError || json.Unmarshal(r.StructuredContent, &res) != nil || res.Choice != "Yes" || res.Number != 1 || !slices.Equal(res.Keys, []string{"Enter"}) {
		t.Fatalf("harness_answer Yes: %s\n%s", r.StructuredContent, c.transcript())
	}
	af.mainRequest(1)
	af.waitState("ready")
	if _, err := os.Stat(filepath.Join(af.work, "made-by-mcp")); err != nil {
		t.Errorf("the approved command did not run: %v\nscreen %s", err, af.lastScreen())
	}

	// Ready again: a second answer is not_waiting.
	_, steps = runTS(t,
		connectStep("in", bridge("ops")),
		opStep("in", "callTool", "name", "harness_answer", "args", map[string]any{"name": af.name, "choice": "Yes"}),
	)
	var again toolResult
	if err := json.Unmarshal(steps[1].Result, &again); err != nil || !again.IsError || !strings.Contains(string(again.StructuredContent), `"not_waiting"`) {
		t.Fatalf("a second harness_answer: %s", steps[1].Result)
	}
}
