package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// dialogScript draws Claude Code's API-key dialog (as 2.1.328 does, the
// cursor on its second choice), reads the four bytes of an answer in raw
// mode, then clears the screen and shows them (od -c) with a prompt.
const dialogScript = `stty raw -echo opost
printf ' Detected a custom API key in your environment\r\n Do you want to use this API key?\r\n\r\n   Yes\r\n ❯ No (recommended)\r\n\r\n Enter to confirm\r\n'
k=$(dd bs=1 count=4 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s\r\n\r\n❯ \r\n' "$k"
exec sleep 100000
`

// TestScenario_AnswerPicksAChoiceOfAWaitingAgent: `answer` refuses a
// stopped harness (not_running), one whose agent is not waiting
// (not_waiting) and a choice the dialog does not offer (invalid_argument
// naming the choices); a choice by its text is typed as the arrows from
// the dialog's cursor and Enter, and the result says the agent left the
// dialog.
func TestScenario_AnswerPicksAChoiceOfAWaitingAgent(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dialog.sh")
	if err := os.WriteFile(script, []byte(dialogScript), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, reader("plain", false)+
		"[harness.claude]\ncmd = \"sh\"\nargs = [\""+script+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n")
	if err := f.call(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes"}, nil); errcode.Of(err) != errcode.NotRunning {
		t.Fatalf("answer to a stopped harness: %v", err)
	}
	if err := f.call(api.OpAnswer, api.AnswerArgs{Name: "nope", Choice: "Yes"}, nil); errcode.Of(err) != errcode.UnknownHarness {
		t.Fatalf("answer to an unknown harness: %v", err)
	}
	f.mustCall(api.OpStart, api.NamesArgs{Names: []string{"plain", "claude"}}, nil)
	f.waitScreen("plain", "ready")
	err := f.call(api.OpAnswer, api.AnswerArgs{Name: "plain", Choice: "Yes"}, nil)
	if errcode.Of(err) != errcode.NotWaiting || !strings.Contains(err.Error(), "plain is not waiting on a prompt: its agent (generic)") {
		t.Fatalf("answer to a generic harness: %v", err)
	}

	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "claude", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
	if w.TimedOut || w.WaitingFor != api.WaitingChoice {
		t.Fatalf("the dialog is not seen waiting: %+v\n%s", w, f.screenOf("claude"))
	}
	err = f.call(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Maybe"}, nil)
	if errcode.Of(err) != errcode.InvalidArgument ||
		!strings.Contains(err.Error(), `does not offer "Maybe": its choices are 1 "Yes", 2 "No (recommended)"`) {
		t.Fatalf("a choice the dialog does not offer: %v", err)
	}
	if err := f.call(api.OpAnswer, map[string]any{"name": "claude", "choise": "Yes"}, nil); errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("a misspelt argument: %v", err)
	}

	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "yes"}, &res)
	if res.Choice != "Yes" || res.Number != 1 || strings.Join(res.Keys, " ") != "Up Enter" || res.RunID == 0 ||
		res.Prompt != "Do you want to use this API key?" {
		t.Fatalf("answer result %+v", res)
	}
	if res.After.AgentState == api.AgentWaiting {
		t.Errorf("the result shows the agent still waiting: %+v", res.After)
	}
	screen := f.waitScreen("claude", "got ")
	if got := strings.Fields(strings.SplitN(screen, "\n", 2)[0]); strings.Join(got, " ") != `got 033 [ A \r` {
		t.Fatalf("the program read %q, want Up and Enter", got)
	}
	err = f.call(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes"}, nil)
	if errcode.Of(err) != errcode.NotWaiting {
		t.Fatalf("a second answer: %v", err)
	}
}
