package control

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/supervise"
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

// permissionScript draws Claude Code's permission dialog for a command
// that carries a token, then waits for the answer's Enter and clears it.
const permissionScript = `stty raw -echo opost
printf ' Bash command\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n curl -H "Authorization: token ghp_0123456789abcdefghijABCDEFGHIJ" api\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n Do you want to proceed?\r\n ❯ 1. Yes, with ghp_0123456789abcdefghijABCDEFGHIJ\r\n   2. No\r\n'
dd bs=1 count=1 2>/dev/null >/dev/null
printf '\033[2J\033[H❯ \r\n'
exec sleep 100000
`

// TestScenario_AnAgentsPromptIsMaskedWhereverItShows: a credential on
// the agent's dialog (its command, a choice) is masked in the list row,
// in the agent event and in the answer's result, as the screen op masks it.
func TestScenario_AnAgentsPromptIsMaskedWhereverItShows(t *testing.T) {
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ"
	script := filepath.Join(t.TempDir(), "permission.sh")
	if err := os.WriteFile(script, []byte(permissionScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	f := newFixture(t, "[harness.claude]\ncmd = \"sh\"\nargs = [\""+script+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n",
		func(f *fixture) {
			f.onEvent = func(ev supervise.Event) {
				if ev.Agent != nil {
					b, _ := json.Marshal(ev.Agent)
					mu.Lock()
					events = append(events, string(b))
					mu.Unlock()
				}
			}
		})
	f.mustCall(api.OpStart, api.NamesArgs{Name: "claude"}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "claude", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
	if w.WaitingFor != api.WaitingPermission || !strings.Contains(w.Prompt, "curl -H") || len(w.Choices) != 2 {
		t.Fatalf("the dialog: %+v\n%s", w, f.screenOf("claude"))
	}
	var rows []api.UnitInfo
	f.mustCall(api.OpList, api.NoArgs{}, &rows)
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "1"}, &res)
	mu.Lock()
	seen := strings.Join(events, "\n")
	mu.Unlock()
	for what, s := range map[string]string{"wait": fmt.Sprint(w), "list": fmt.Sprint(rows), "answer": fmt.Sprint(res), "events": seen} {
		if strings.Contains(s, token) || !strings.Contains(s, "[masked]") {
			t.Errorf("%s shows the token (or masks nothing): %s", what, s)
		}
	}
}

// twiceScript draws the same API-key dialog twice, a prompt between
// them: two prompts that look alike, answered one after the other.
const twiceScript = `stty raw -echo opost
for i in 1 2; do
printf '\033[2J\033[H Detected a custom API key in your environment\r\n Do you want to use this API key?\r\n\r\n   Yes\r\n ❯ No (recommended)\r\n\r\n Enter to confirm\r\n'
k=$(dd bs=1 count=4 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s\r\n\r\n❯ \r\n' "$k"
sleep 1
done
exec sleep 100000
`

// TestScenario_AnAnswerBoundToAPromptAnswersThatPromptOnly: an answer
// that names a prompt (prompt_id) types nothing while another prompt is
// on screen, even one that looks the same as the one it names: the
// second drawing of a dialog has a new id, and the first one's is
// refused not_waiting.
func TestScenario_AnAnswerBoundToAPromptAnswersThatPromptOnly(t *testing.T) {
	script := filepath.Join(t.TempDir(), "twice.sh")
	if err := os.WriteFile(script, []byte(twiceScript), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "[harness.claude]\ncmd = \"sh\"\nargs = [\""+script+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n")
	f.mustCall(api.OpStart, api.NamesArgs{Name: "claude"}, nil)
	waitPrompt := func() api.WaitResult {
		t.Helper()
		var w api.WaitResult
		f.mustCall(api.OpWait, api.WaitArgs{Name: "claude", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
		if w.TimedOut || w.PromptID == 0 {
			t.Fatalf("the dialog is not seen waiting with a prompt id: %+v\n%s", w, f.screenOf("claude"))
		}
		return w
	}
	first := waitPrompt()
	err := f.call(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes", PromptID: first.PromptID + 1000}, nil)
	if errcode.Of(err) != errcode.NotWaiting {
		t.Fatalf("an answer to another prompt id: %v", err)
	}
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes", PromptID: first.PromptID}, nil)
	f.waitScreen("claude", "got ")
	second := waitPrompt()
	if second.Prompt != first.Prompt || second.PromptID == first.PromptID {
		t.Fatalf("the second dialog: %+v, the first: %+v", second, first)
	}
	err = f.call(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes", PromptID: first.PromptID}, nil)
	if errcode.Of(err) != errcode.NotWaiting {
		t.Fatalf("the first prompt's answer on the second: %v", err)
	}
	if s := f.screenOf("claude"); !strings.Contains(s, "Do you want to use this API key?") {
		t.Fatalf("the refused answer typed something:\n%s", s)
	}
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes", PromptID: second.PromptID}, nil)
}

// cursorScript draws the API-key dialog, takes an Up (3 bytes) and
// draws it again with the cursor moved, then waits for the Enter.
const cursorScript = `stty raw -echo opost
printf ' Detected a custom API key in your environment\r\n Do you want to use this API key?\r\n\r\n   Yes\r\n ❯ No (recommended)\r\n\r\n Enter to confirm\r\n'
dd bs=1 count=3 2>/dev/null >/dev/null
printf '\033[2J\033[H Detected a custom API key in your environment\r\n Do you want to use this API key?\r\n\r\n ❯ Yes\r\n   No (recommended)\r\n\r\n Enter to confirm\r\n'
k=$(dd bs=1 count=1 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s\r\n\r\n❯ \r\n' "$k"
exec sleep 100000
`

// TestScenario_APromptKeepsItsIDWhileItsCursorMoves: a dialog whose
// cursor moves is the same prompt: its agent event says so with the same
// prompt_id, and an answer bound to that id still answers it (with the
// keys from the cursor's new place).
func TestScenario_APromptKeepsItsIDWhileItsCursorMoves(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cursor.sh")
	if err := os.WriteFile(script, []byte(cursorScript), 0o755); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan api.AgentView, 16)
	f := newFixture(t, "[harness.claude]\ncmd = \"sh\"\nargs = [\""+script+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n",
		func(f *fixture) {
			f.onEvent = func(ev supervise.Event) {
				if ev.Agent != nil && ev.Agent.AgentState == api.AgentWaiting {
					select {
					case waiting <- *ev.Agent:
					default: // never block the actor
					}
				}
			}
		})
	f.mustCall(api.OpStart, api.NamesArgs{Name: "claude"}, nil)
	next := func() api.AgentView {
		t.Helper()
		select {
		case v := <-waiting:
			return v
		case <-time.After(30 * time.Second):
			t.Fatalf("no waiting event:\n%s", f.screenOf("claude"))
		}
		return api.AgentView{}
	}
	first := next()
	f.mustCall(api.OpSend, api.SendArgs{Name: "claude", Keys: []string{"Up"}}, nil)
	moved := next()
	if first.PromptID == 0 || moved.PromptID != first.PromptID {
		t.Fatalf("the prompt's id changed as its cursor moved: %d, then %d", first.PromptID, moved.PromptID)
	}
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes", PromptID: first.PromptID}, &res)
	if strings.Join(res.Keys, " ") != "Enter" {
		t.Fatalf("keys %q, want Enter from the moved cursor", res.Keys)
	}
	f.waitScreen("claude", "got ")
}
