package control

import (
	"slices"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// steps runs states of run 1 through a prompt pending for it and returns
// what each step typed ("" when nothing; "again:" before a retype).
func steps(states ...api.AgentState) []string {
	var p pendingPrompt
	p.run, p.text = 1, "do it"
	var out []string
	for _, s := range states {
		text, again := p.promptStep(1, s)
		if again {
			text = "again:" + text
		}
		out = append(out, text)
	}
	return out
}

func TestScenario_ATypedPromptIsTypedOnceWhenTheAgentTakesIt(t *testing.T) {
	got := steps(api.AgentStarting, api.AgentReady, api.AgentWorking, api.AgentReady, api.AgentWaiting, api.AgentStarting, api.AgentReady)
	want := []string{"", "do it", "", "", "", "", ""}
	if !slices.Equal(got, want) {
		t.Errorf("typed %q, want %q", got, want)
	}
}

// Gemini CLI in an undecided folder, wired: ready, then its trust dialog,
// then its process replaced after the answer; what was typed went with it.
// The second typing is the last: Gemini reads as starting for a moment
// after it takes a prompt.
func TestScenario_APromptTypedBeforeADialogThatRestartsTheAgentIsTypedAgain(t *testing.T) {
	got := steps(api.AgentStarting, api.AgentReady, api.AgentWaiting, api.AgentStarting, api.AgentReady, api.AgentStarting, api.AgentReady, api.AgentWorking)
	want := []string{"", "do it", "", "", "again:do it", "", "", ""}
	if !slices.Equal(got, want) {
		t.Errorf("typed %q, want %q", got, want)
	}
	// Seen working after the restart: taken, not typed again.
	got = steps(api.AgentReady, api.AgentWaiting, api.AgentStarting, api.AgentWorking, api.AgentReady)
	if want := []string{"do it", "", "", "", ""}; !slices.Equal(got, want) {
		t.Errorf("typed %q, want %q", got, want)
	}
}

// Claude Code's dialogs come before its first ready: the prompt is typed
// once, at that ready; a dialog after the typing that restarts nothing
// (a permission) types nothing more.
func TestScenario_ADialogBeforeTheFirstReadyOrWithoutARestartTypesNothingMore(t *testing.T) {
	got := steps(api.AgentStarting, api.AgentWaiting, api.AgentReady, api.AgentWaiting, api.AgentReady)
	want := []string{"", "", "do it", "", ""}
	if !slices.Equal(got, want) {
		t.Errorf("typed %q, want %q", got, want)
	}
	var p pendingPrompt
	p.run, p.text = 1, "do it"
	if text, _ := p.promptStep(2, api.AgentReady); text != "" {
		t.Errorf("another run's ready typed %q", text)
	}
	p.forgetPrompt(1)
	if text, _ := p.promptStep(1, api.AgentReady); text != "" {
		t.Errorf("an ended run's ready typed %q", text)
	}
}
