package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// fixture reads a screen captured from the real agent
// (testdata/AGENT/NAME.txt, one row per line), with bracketed paste on as
// the agent had it, reading keys.
func fixture(t *testing.T, agent, name string) Screen {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", agent, name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return Screen{Lines: strings.Split(string(b), "\n"), Shown: true, Paste: true}
}

type want struct {
	file       string
	busy       bool
	state      api.AgentState
	waitingFor api.WaitingFor
	prompt     string
	choices    []string
	selected   int
	until      string // "15:04" in the test's location, "" for none
	// suggested is the choice that goes on ("" when the adapter does not
	// know which).
	suggested string
}

func checkFixtures(t *testing.T, agent string, cases []want) {
	t.Helper()
	a := MustLookup(agent)
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range cases {
		s := fixture(t, agent, c.file)
		s.Busy = c.busy
		st := a.Classify(s, now)
		if st.AgentState != c.state || st.WaitingFor != c.waitingFor || st.Prompt != c.prompt || !slices.Equal(st.Choices, c.choices) {
			t.Errorf("%s/%s: got %s/%s prompt %q choices %q\nwant %s/%s prompt %q choices %q",
				agent, c.file, st.AgentState, st.WaitingFor, st.Prompt, st.Choices, c.state, c.waitingFor, c.prompt, c.choices)
		}
		if r, ok := a.Rule(s); ok && c.choices != nil {
			if got := r.Selected(s.Lines); got != c.selected {
				t.Errorf("%s/%s: selected %d, want %d", agent, c.file, got, c.selected)
			}
		}
		if st.Suggested != c.suggested {
			t.Errorf("%s/%s: suggested %q, want %q", agent, c.file, st.Suggested, c.suggested)
		}
		var until string
		if st.Until != nil {
			until = st.Until.Format("15:04")
		}
		if until != c.until {
			t.Errorf("%s/%s: until %q, want %q", agent, c.file, until, c.until)
		}
	}
}

func TestScenario_ClaudeCodeScreens(t *testing.T) {
	checkFixtures(t, ClaudeCode, []want{
		{file: "trust", state: api.AgentWaiting, waitingFor: api.WaitingTrust,
			prompt: "Is this a project you created or one you trust?", choices: []string{"No, exit", "Yes, I trust this folder"}, selected: 0,
			// The first choice ends the session: the one that goes on is suggested.
			suggested: "Yes, I trust this folder"},
		{file: "apikey", state: api.AgentWaiting, waitingFor: api.WaitingChoice,
			prompt: "Do you want to use this API key?", choices: []string{"Yes", "No (recommended)"}, selected: 1, suggested: "Yes"},
		{file: "ready", state: api.AgentReady},
		{file: "ready", busy: true, state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		{file: "working", state: api.AgentWorking},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch made-by-agent",
			choices: []string{"Yes", "Yes, and always allow access to /home/u/work-claude from this project",
				"Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, selected: 0, suggested: "Yes"},
		// A choice wider than the terminal goes on in the next row.
		{file: "permission-wrapped", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch made-by-a-rather-long-file-name-to-wrap",
			choices: []string{"Yes", "Yes, and always allow access to /home/u/a-very-long-project-directory-name-for-a-test-of-wrapping/work-claude from this project",
				"Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}, selected: 0, suggested: "Yes"},
		// An MCP tool's dialog names the tool under "Tool use".
		{file: "permission-mcp", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "harness — Harness List Tool: (MCP)",
			choices:  []string{"Yes", "Yes, and don't ask again for harness — Harness List commands in /tmp/TestAgent_MCPWiringReachesHarnesscla…", "No"},
			selected: 0, suggested: "Yes"},
		{file: "answered", state: api.AgentReady},
		{file: "limited", state: api.AgentLimited, until: "23:30"},
		// Its own retry countdown is no reset: the limit's is not known.
		{file: "limited-retrying", busy: true, state: api.AgentLimited},
	})
}

// TestScenario_ANarrowScreensChoicesAndPromptAreUnwrapped: Claude Code
// in 56 columns (a phone's view had the PTY so) breaks a long command
// and a long path mid-word to fit (testdata permission-narrow, the real
// program's screen). The prompt is the whole command, not its first row,
// and the path in a choice comes out whole, not broken by a space where
// the row ended; a break between words keeps its space.
func TestScenario_ANarrowScreensChoicesAndPromptAreUnwrapped(t *testing.T) {
	s := fixture(t, ClaudeCode, "permission-narrow")
	s.Cols = 56
	st := MustLookup(ClaudeCode).Classify(s, time.Now())
	want := []string{"Yes", "Yes, and always allow access to /tmp/exp/a-very-long-project-directory-name-for-a-test-of-wrapping/work-claude from this project",
		"Yes, and switch to auto mode · auto mode handles these prompts for you", "No"}
	if st.AgentState != api.AgentWaiting || st.Prompt != "touch made-by-a-rather-long-file-name-to-wrap-in-a-narrow-terminal-of-a-phone.txt" ||
		!slices.Equal(st.Choices, want) || st.Suggested != "Yes" {
		t.Errorf("got %s prompt %q choices %q suggested %q\nwant prompt of the whole command, choices %q", st.AgentState, st.Prompt, st.Choices, st.Suggested, want)
	}
}

// TestScenario_ABoxsBorderIsNoTextThatFillsARow: Gemini CLI draws its
// dialogs in a box whose right border reaches the screen's edge on every
// row; its screens read the same with their width known.
func TestScenario_ABoxsBorderIsNoTextThatFillsARow(t *testing.T) {
	for _, file := range []string{"trust", "permission", "limited"} {
		s := fixture(t, Gemini, file)
		s.Cols = 120
		with := MustLookup(Gemini).Classify(s, time.Now())
		s.Cols = 0
		without := MustLookup(Gemini).Classify(s, time.Now())
		if with.Prompt != without.Prompt || !slices.Equal(with.Choices, without.Choices) {
			t.Errorf("gemini/%s: with the width %q %q, without %q %q", file, with.Prompt, with.Choices, without.Prompt, without.Choices)
		}
	}
	if !full(" │ touch made-by-a-rather-long-file-name-to-wrap-in-a-n", 56) || full("│ Usage limit reached for gemini-3.8-flash.        │", 52) {
		t.Error("full misreads a row")
	}
}

func TestScenario_ResetTimesAsAgentsShowThem(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for text, want := range map[string]string{
		"Usage limit reached · resets 11:30pm":                                  "2026-12-01 23:30",
		"You've hit your limit · resets 3pm":                                    "2026-12-02 15:00",
		"Try again at 8:05 PM.":                                                 "2026-12-01 20:05",
		"try again in 2 hours 5 minutes":                                        "2026-12-01 22:05",
		"Please retry in 45s.":                                                  "2026-12-01 20:00",
		"quota resets at 2026-12-03T10:00:00Z":                                  "2026-12-03 10:00",
		"Your quota will reset after 1h 30m.":                                   "2026-12-01 21:30",
		"Usage limit reached for your plan.":                                    "",
		"or try again at Dec 2nd, 2026 12:06 AM.":                               "2026-12-02 00:06",
		"API Error: Request rejected (429) · Usage limit reached":               "",
		"429 Usage limit reached for your plan · retrying in 3s · attempt 3/10": "",
		"Retrying in 5 minutes (attempt 2)":                                     "",
	} {
		got, ok := ParseReset(text, now)
		s := ""
		if ok {
			s = got.Format("2006-01-02 15:04")
		}
		if s != want {
			t.Errorf("ParseReset(%q) = %q, want %q", text, s, want)
		}
	}
}

func TestScenario_GeminiScreens(t *testing.T) {
	checkFixtures(t, Gemini, []want{
		{file: "trust", state: api.AgentWaiting, waitingFor: api.WaitingTrust, prompt: "Do you trust the files in this folder?",
			choices: []string{"Trust folder (work-gemini)", "Trust parent folder (001)", "Don't trust"}, selected: 0,
			suggested: "Trust folder (work-gemini)"},
		// It restarts after the answer with the dialog still in view: not
		// waiting any more.
		{file: "restarting", state: api.AgentStarting},
		// The new process's banner and prompt below the message.
		{file: "restarted", state: api.AgentReady},
		{file: "ready", state: api.AgentReady},
		{file: "working", state: api.AgentWorking},
		{file: "answered", state: api.AgentReady},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch made-by-agent",
			choices: []string{"Allow once", "Allow for this session", "No, suggest changes (esc)"}, selected: 0,
			suggested: "Allow once"},
		{file: "after", state: api.AgentReady},
		{file: "limited", state: api.AgentLimited, choices: []string{"Keep trying", "Stop"}, selected: 0},
	})
}

// TestScenario_APromptInLineModeIsStarting: a prompt or dialog drawn
// while the agent's terminal is back in line mode (Screen.LineMode) takes
// no keys: starting; what does not ask for keys reads as before.
func TestScenario_APromptInLineModeIsStarting(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		agent, file string
		busy        bool
		want        api.AgentState
	}{
		{Gemini, "restarted", false, api.AgentStarting},
		{Gemini, "trust", false, api.AgentStarting},
		{Gemini, "permission", false, api.AgentStarting},
		{Gemini, "working", true, api.AgentWorking},
		{Gemini, "limited", false, api.AgentLimited},
		{Codex, "ready", false, api.AgentStarting}, // the floor's ready
		{Codex, "ready", true, api.AgentWorking},
		{ClaudeCode, "ready", false, api.AgentStarting},
	} {
		s := fixture(t, c.agent, c.file)
		s.Busy, s.LineMode = c.busy, true
		st := MustLookup(c.agent).Classify(s, now)
		if st.AgentState != c.want || st.WaitingFor != "" && c.want == api.AgentStarting || len(st.Choices) > 0 && c.want == api.AgentStarting {
			t.Errorf("%s/%s in line mode: %+v, want %s", c.agent, c.file, st, c.want)
		}
		s.LineMode = false
		if raw := MustLookup(c.agent).Classify(s, now); raw.AgentState == api.AgentStarting {
			t.Errorf("%s/%s in raw mode: %s", c.agent, c.file, raw.AgentState)
		}
	}
}

// TestScenario_GeminiTakesKeysOnceItTurnsPasteOn: Gemini CLI draws its
// prompt before its key reader runs and turns bracketed paste on with it:
// its prompt and dialogs are starting while the mode is off; Claude
// Code's and Codex's are not read so.
func TestScenario_GeminiTakesKeysOnceItTurnsPasteOn(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		agent, file string
		want        api.AgentState
	}{
		{Gemini, "restarted", api.AgentStarting},
		{Gemini, "trust", api.AgentStarting},
		{Gemini, "permission", api.AgentStarting},
		{Gemini, "limited", api.AgentLimited},
		{ClaudeCode, "ready", api.AgentReady},
		{ClaudeCode, "permission", api.AgentWaiting},
		{Codex, "ready", api.AgentReady},
	} {
		s := fixture(t, c.agent, c.file)
		s.Paste = false
		if st := MustLookup(c.agent).Classify(s, now); st.AgentState != c.want {
			t.Errorf("%s/%s with paste off: %+v, want %s", c.agent, c.file, st, c.want)
		}
	}
}

// TestScenario_GeminiRestartingAfterATrustAnswer: after the trust answer
// Gemini CLI's old process may draw its prompt below the message (or
// redraw the whole screen) before the new one starts; the screen alone
// cannot tell them apart, Screen.Restarting does (the tracker holds it
// until the old process lets go of the terminal).
func TestScenario_GeminiRestartingAfterATrustAnswer(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	a := MustLookup(Gemini)
	if r, ok := a.Rule(fixture(t, Gemini, "restarting")); !ok || !r.Restarts {
		t.Fatalf("the restarting screen matched %+v, want a rule that Restarts", r)
	}
	// The message shows whether or not the old prompt came with it, and
	// stays in view after the new process drew (the tracker starts its
	// hold when it shows up).
	for file, want := range map[string]int{"restarting": 1, "restarting-composer": 1, "restarted": 1, "ready": 1, "trust": 0, "limited": 0} {
		if got := a.RestartsShown(fixture(t, Gemini, file).Lines); got != want {
			t.Errorf("RestartsShown(%s) = %d, want %d", file, got, want)
		}
	}
	// A second restart while the first message is still in view.
	twice := fixture(t, Gemini, "restarted").Lines
	twice = append(twice, " Gemini CLI is restarting to apply the trust changes...")
	if got := a.RestartsShown(twice); got != 2 {
		t.Errorf("RestartsShown with a second message = %d, want 2", got)
	}
	if n := MustLookup(ClaudeCode).RestartsShown(fixture(t, Gemini, "restarting").Lines); n != 0 {
		t.Errorf("Claude Code, which has no rule that Restarts, saw %d restarts", n)
	}
	for _, file := range []string{"restarting-composer", "ready", "restarted", "after"} {
		s := fixture(t, Gemini, file)
		if st := a.Classify(s, now); st.AgentState != api.AgentReady {
			t.Errorf("%s: %s, want ready once the old process let go", file, st.AgentState)
		}
		s.Restarting = true
		if st := a.Classify(s, now); st.AgentState != api.AgentStarting {
			t.Errorf("%s while restarting: %s, want starting", file, st.AgentState)
		}
	}
}

func TestScenario_CodexScreens(t *testing.T) {
	checkFixtures(t, Codex, []want{
		{file: "ready", state: api.AgentReady},
		// Streaming shows no status line: busy is working.
		{file: "streaming", busy: true, state: api.AgentWorking},
		{file: "answered", state: api.AgentReady},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch made-by-agent",
			choices: []string{"Yes, proceed (y)", "Yes, and don't ask again for commands that start with `touch made-by-agent` (p)",
				"No, and tell Codex what to do differently (esc)"}, selected: 0, suggested: "Yes, proceed (y)"},
		{file: "after", state: api.AgentReady},
		{file: "limited", state: api.AgentLimited, until: "00:06"},
	})
}

// TestScenario_ClaudeTakesNoKeysWhileItProbesItsTerminal: Claude Code's
// first dialog (folder trust) is drawn with its terminal probe, and keys
// typed before the probe ends are lost; while Screen.Settling (the
// tracker holds it for Adapter.KeysAfter after the first output) the
// dialog reads as starting, and as waiting once it ends. An agent without
// KeysAfter is never held so.
func TestScenario_ClaudeTakesNoKeysWhileItProbesItsTerminal(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := MustLookup(ClaudeCode)
	if a.KeysAfter <= 0 {
		t.Fatal("Claude Code's adapter has no KeysAfter")
	}
	s := fixture(t, ClaudeCode, "trust")
	s.Settling = true
	if st := a.Classify(s, now); st.AgentState != api.AgentStarting {
		t.Errorf("trust dialog while settling: %+v, want starting", st)
	}
	s.Settling = false
	if st := a.Classify(s, now); st.AgentState != api.AgentWaiting || st.WaitingFor != api.WaitingTrust {
		t.Errorf("trust dialog once settled: %+v, want waiting for trust", st)
	}
	if MustLookup(Codex).KeysAfter != 0 || MustLookup(Gemini).KeysAfter != 0 {
		t.Error("only Claude Code was seen to drop keys after its first frame")
	}
}
