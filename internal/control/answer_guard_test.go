package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// laterDialog is the start of a script that shows Claude Code's prompt,
// and past the adapter's KeysAfter (2 s) clears it for the API-key
// dialog, its cursor on its second choice: a dialog that comes in the
// middle of a run, as a permission does.
const laterDialog = `stty raw -echo opost
printf '❯ \r\n? for shortcuts\r\n'
sleep 2.5
printf '\033[2J\033[H Detected a custom API key in your environment\r\n Do you want to use this API key?\r\n\r\n   Yes\r\n ❯ No (recommended)\r\n\r\n Enter to confirm\r\n'
`

// guardScript drops (and counts) what is typed within 0.5 s of its
// dialog's draw, as Claude Code 2.1.328 drops a dialog's keys that come
// within 150 ms of it (600 ms after typing), then takes an answer.
const guardScript = laterDialog + `sleep 0.5
n=$(timeout --foreground 0.2 dd bs=64 count=1 2>/dev/null | wc -c)
k=$(dd bs=1 count=4 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s dropped %s\r\n\r\n❯ \r\n' "$k" "$n"
exec sleep 100000
`

// dropScript drops the first two answers typed on its dialog, which
// stays, and takes the third.
const dropScript = laterDialog + `dd bs=1 count=8 2>/dev/null >/dev/null
k=$(dd bs=1 count=4 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s\r\n\r\n❯ \r\n' "$k"
exec sleep 100000
`

func startScript(t *testing.T, script string) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dialog.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "[harness.claude]\ncmd = \"sh\"\nargs = [\""+path+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n")
	f.mustCall(api.OpStart, api.NamesArgs{Name: "claude"}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "claude", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
	if w.TimedOut || w.WaitingFor != api.WaitingChoice {
		t.Fatalf("the dialog is not seen waiting: %+v\n%s", w, f.screenOf("claude"))
	}
	return f
}

// TestScenario_AnAnswerTheMomentADialogShowsIsNotDropped: an answer typed
// the moment the agent's dialog is seen waits until the dialog takes keys
// (the adapter's AnswerAfter), so the agent, which drops keys that come
// right after its draw, takes it the first time.
func TestScenario_AnAnswerTheMomentADialogShowsIsNotDropped(t *testing.T) {
	f := startScript(t, guardScript)
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes"}, &res)
	if strings.Join(res.Keys, " ") != "Up Enter" {
		t.Fatalf("keys %q", res.Keys)
	}
	screen := f.waitScreen("claude", "got ")
	if got := strings.Join(strings.Fields(strings.SplitN(screen, "\n", 2)[0]), " "); got != `got 033 [ A \r dropped 0` {
		t.Fatalf("the program read %q, want Up and Enter, none dropped", got)
	}
}

// TestScenario_ADialogThatStaysAfterItsAnswerIsAnsweredAgain: when the
// agent silently drops an answer, twice, and its dialog stays, the answer
// is typed again, and its result shows the agent past the dialog.
func TestScenario_ADialogThatStaysAfterItsAnswerIsAnsweredAgain(t *testing.T) {
	f := startScript(t, dropScript)
	start := time.Now()
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes"}, &res)
	if res.After.AgentState == api.AgentWaiting {
		t.Errorf("the result shows the agent still waiting after %v: %+v", time.Since(start), res.After)
	}
	screen := f.waitScreen("claude", "got ")
	if got := strings.Join(strings.Fields(strings.SplitN(screen, "\n", 2)[0]), " "); got != `got 033 [ A \r` {
		t.Fatalf("the program read %q the third time, want Up and Enter", got)
	}
}
