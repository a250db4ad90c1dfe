//go:build interop

package interop

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// TestAgent_GeminiSubmitsASentPromptAtTheFirstEnter: Gemini CLI takes an
// Enter that comes within 40 ms of a paste for a newline, so text and
// Enter written at once stayed in its input box and never reached the
// model. One `harness send gemini TEXT --enter` now submits: the model
// server gets the prompt and the answer shows, twice in a row, with no
// Enter pressed again; and an interactive harness's prompt, typed once
// Gemini is first ready, reaches the model too.
func TestAgent_GeminiSubmitsASentPromptAtTheFirstEnter(t *testing.T) {
	t.Run("send", func(t *testing.T) {
		af := newAgentFleet(t, geminiSpec, modelapi.AgentOptions{Trusted: true})
		af.api.Script(modelapi.Turn{Text: "Fixed the first one."}, modelapi.Turn{Text: "Fixed the second one."})
		af.screenHas("its prompt", geminiSpec.prompt)
		for i, prompt := range []string{"fix the bug", "now the next bug"} {
			af.waitState("ready")
			before := len(af.api.Requests())
			out, errOut, code := af.Run("send", af.name, prompt, "--enter")
			if code != 0 || !strings.Contains(out, "sent ") {
				t.Fatalf("send --enter: exit %d: %s%s", code, out, errOut)
			}
			af.promptRequest(before, prompt)
			af.screenHas("the answer", []string{"Fixed the first one.", "Fixed the second one."}[i])
		}
		if n := len(af.api.MainRequests()); n != 2 {
			t.Errorf("%d main requests for two sends, want 2", n)
		}
	})
	t.Run("prompt", func(t *testing.T) {
		const prompt = "Fix the flaky test"
		af := newAgentFleetEnv(t, geminiSpec, modelapi.AgentOptions{Trusted: true}, nil, t.TempDir(), "", `prompt = "`+prompt+`"`)
		af.promptRequest(0, prompt)
		af.screenHas("the answer", modelapi.DefaultText)
	})
}
