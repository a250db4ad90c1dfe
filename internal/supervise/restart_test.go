package supervise

import (
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
)

// Gemini CLI's screens around a trust answer, cut to the rows its rules
// read (internal/agent/testdata/gemini has them whole).
var (
	geminiDialog = []string{
		" │ Do you trust the files in this folder?  │",
		" │ ● 1. Trust folder (work)                │",
		" │   2. Trust parent folder (tmp)          │",
		" │   3. Don't trust                        │",
		" ╰─────────────────────────────────────────╯",
	}
	geminiMessage = []string{" Gemini CLI is restarting to apply the trust changes..."}
	geminiPrompt  = []string{" >   Type your message or @path/to/file"}
)

// look is one look at a screen: at, after the first; the screen; the
// terminal in line mode, or paste off; and whether the agent is
// restarting then.
type look struct {
	at        time.Duration
	lines     []string
	line, off bool
	want      bool
}

// TestScenario_GeminiRestartsOnItsScreen follows restartWatch through
// the orders Gemini CLI 0.61.0 draws a trust answer in: the prompt drawn
// before the restart message, the restart taken back, an answer that
// restarts nothing, and the bounds of each hold.
func TestScenario_GeminiRestartsOnItsScreen(t *testing.T) {
	gemini := agent.MustLookup(agent.Gemini)
	cases := []struct {
		name  string
		looks []look
	}{
		{"its prompt drawn before the restart message", []look{
			{0, slices.Concat(geminiDialog), false, false, false},
			{100 * time.Millisecond, slices.Concat(geminiPrompt), false, false, true},
			{400 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage), false, false, true},
			{700 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, true},
			{800 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage), true, true, false}, // the old process let go
			{2 * time.Second, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, false},
		}},
		{"the message and the old prompt in one frame", []look{
			{0, slices.Concat(geminiDialog), false, false, false},
			{100 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, true},
			{time.Second, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, true, false}, // paste off
		}},
		{"the restart taken back", []look{
			{0, slices.Concat(geminiDialog), false, false, false},
			{100 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage), false, false, true},
			{500 * time.Millisecond, slices.Concat(geminiPrompt), false, false, true},
			{500*time.Millisecond + RestartGone - time.Millisecond, slices.Concat(geminiPrompt), false, false, true},
			{500*time.Millisecond + RestartGone, slices.Concat(geminiPrompt), false, false, false},
		}},
		{"a message out of view for a frame", []look{
			{0, slices.Concat(geminiDialog, geminiMessage), false, false, true},
			{100 * time.Millisecond, nil, false, false, true},
			{200 * time.Millisecond, slices.Concat(geminiDialog, geminiMessage), false, false, true},
			{200*time.Millisecond + RestartGone, slices.Concat(geminiDialog, geminiMessage), false, false, true},
		}},
		{"an answer that restarts nothing", []look{
			{0, slices.Concat(geminiDialog), false, false, false},
			{100 * time.Millisecond, slices.Concat(geminiPrompt), false, false, true},
			{100*time.Millisecond + AnswerRestartWait - time.Millisecond, slices.Concat(geminiPrompt), false, false, true},
			{100*time.Millisecond + AnswerRestartWait, slices.Concat(geminiPrompt), false, false, false},
		}},
		{"a dialog redrawn through a blank screen is still asking", []look{
			{0, slices.Concat(geminiDialog), false, false, false},
			{100 * time.Millisecond, nil, false, false, true},
			{150 * time.Millisecond, slices.Concat(geminiDialog), false, false, false},
		}},
		{"an old process never seen letting go", []look{
			{0, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, true},
			{RestartHold - time.Millisecond, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, true},
			{RestartHold, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, false},
			{RestartHold + time.Second, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, false},
		}},
		{"a second restart later", []look{
			{0, slices.Concat(geminiDialog, geminiMessage), false, false, true},
			{time.Second, slices.Concat(geminiDialog, geminiMessage), true, true, false},
			{3 * time.Second, slices.Concat(geminiDialog, geminiMessage, geminiPrompt), false, false, false},
			{time.Minute, slices.Concat(geminiDialog, geminiMessage, geminiPrompt, geminiMessage), false, false, true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w restartWatch
			for i, l := range c.looks {
				s := agent.Screen{Lines: l.lines, Shown: true, LineMode: l.line, Paste: !l.off}
				if got := w.look(gemini, s, t0.Add(l.at)); got != l.want {
					t.Errorf("look %d at %v: restarting %v, want %v", i, l.at, got, l.want)
				}
			}
		})
	}
}
