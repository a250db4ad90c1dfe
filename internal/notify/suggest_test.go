package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_TheTrustDialogSuggestsTheChoiceThatGoesOn: Claude Code's
// trust dialog as the real program draws it (package agent's testdata)
// lists "No, exit" first, which ends the session. Its notification
// suggests the choice its adapter says goes on, "Yes, I trust this
// folder", and offers every choice, each marked with its number.
func TestScenario_TheTrustDialogSuggestsTheChoiceThatGoesOn(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "claude-code", "trust.txt"))
	if err != nil {
		t.Fatal(err)
	}
	view := agent.MustLookup(agent.ClaudeCode).Classify(agent.Screen{Lines: strings.Split(string(b), "\n"), Shown: true, Paste: true}, time.Now())
	r := newReceiver(t)
	n := newTestNotifier(t, table("phone", r.URL))
	observe(n, []api.Event{{Kind: api.EventAgent, Unit: "svc", State: "running", RunID: 1, Agent: &view}})
	r.wait(t, 1)
	m := r.message(t, 0)
	var acts []string
	for _, a := range m.Actions {
		acts = append(acts, a.Label+": "+a.Command)
	}
	want := []string{"answer: harness answer svc 'Yes, I trust this folder'", "answer 1: harness answer svc 'No, exit'", "attach: harness attach svc"}
	if m.Suggested != "Yes, I trust this folder" || strings.Join(acts, "\n") != strings.Join(want, "\n") {
		t.Errorf("suggested %q, actions\n%s\nwant\n%s", m.Suggested, strings.Join(acts, "\n"), strings.Join(want, "\n"))
	}
	if text := m.Text(); !strings.Contains(text, "\n  1. No, exit\n  2. Yes, I trust this folder (suggested)") {
		t.Errorf("text:\n%s", text)
	}
}
