//go:build interop

package interop

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// TestAgent_AReviewReachesEachAgentAsOneUserMessage: `harness review`
// with two line comments types one message to a real agent once it is
// ready; it submits, and the scripted model server gets both path:line:
// text lines, one a line, in the next request. Claude Code first, then
// Codex and Gemini CLI, which take their Enter after a paste each their
// own way.
func TestAgent_AReviewReachesEachAgentAsOneUserMessage(t *testing.T) {
	for _, spec := range []agentSpec{claudeSpec, codexSpec, geminiSpec} {
		t.Run(spec.agent, func(t *testing.T) {
			af := newAgentFleet(t, spec, modelapi.AgentOptions{Trusted: true})
			af.api.Script(modelapi.Turn{Text: "I will fix both."})
			af.screenHas("its prompt", spec.prompt)
			af.waitState("ready")
			before := len(af.api.Requests())
			out, errOut, code := af.Run("review", af.name, "--comment", "main.go:12: use a constant here",
				"--comment", "util/strings.go:3: name this function for what it does", "--wait", "2m")
			if code != 0 || !strings.Contains(out, "typed a review of 2 comments") {
				t.Fatalf("review: exit %d: %s%s", code, out, errOut)
			}
			r := af.promptRequest(before, "main.go:12: use a constant here")
			if body := string(r.Body); !strings.Contains(body, `main.go:12: use a constant here\nutil/strings.go:3: name this function for what it does`) {
				t.Errorf("the request does not carry the comments one a line: %.2000s", body)
			}
			af.screenHas("the answer", "I will fix both.")
		})
	}
}
