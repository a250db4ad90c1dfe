package control

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/supervise"
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

// startScript runs script as a Claude Code harness and waits until it is
// seen waiting for want.
func startScript(t *testing.T, script string, want api.WaitingFor, opts ...func(*fixture)) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dialog.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "[harness.claude]\ncmd = \"sh\"\nargs = [\""+path+"\"]\nagent = \"claude-code\"\nstop_grace = 2\n", opts...)
	f.mustCall(api.OpStart, api.NamesArgs{Name: "claude"}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "claude", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
	if w.TimedOut || w.WaitingFor != want {
		t.Fatalf("the dialog is not seen waiting: %+v\n%s", w, f.screenOf("claude"))
	}
	return f
}

// TestScenario_AnAnswerTheMomentADialogShowsIsNotDropped: an answer typed
// the moment the agent's dialog is seen waits until the dialog takes keys
// (the adapter's AnswerAfter), so the agent, which drops keys that come
// right after its draw, takes it the first time.
func TestScenario_AnAnswerTheMomentADialogShowsIsNotDropped(t *testing.T) {
	f := startScript(t, guardScript, api.WaitingChoice)
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
	f := startScript(t, dropScript, api.WaitingChoice)
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

// resizeRedrawScript shows a permission dialog in the middle of a run and,
// 0.2 s later (within the adapter's AnswerAfter of its first look), draws
// it again with its second choice's path grown, as a resize that wraps a
// long choice anew does. It drops (and counts) what is typed within
// 0.65 s of the first draw, then takes one key.
const resizeRedrawScript = `stty raw -echo opost
printf '❯ \r\n? for shortcuts\r\n'
sleep 2.5
dialog() {
  printf '\033[2J\033[H● Bash(touch x)\r\n\r\n Bash command\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n touch x\r\n╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. Yes, and always allow access to %s from this project\r\n   3. No\r\n\r\n Esc to cancel\r\n' "$1"
}
dialog /tmp/work
sleep 0.2
dialog /tmp/work/claude
sleep 0.45
n=$(timeout --foreground 0.2 dd bs=64 count=1 2>/dev/null | wc -c)
k=$(dd bs=1 count=1 2>/dev/null | od -An -c)
printf '\033[2J\033[Hgot %s dropped %s\r\n\r\n❯ \r\n' "$k" "$n"
exec sleep 100000
`

// TestScenario_AnAnswerToADialogRedrawnBeforeItTakesKeysIsTyped: a
// dialog drawn again while its answer waits for it to take keys (the
// dashboard's terminal attached and resized it; a long choice wrapped
// anew) is a new prompt that asks the same and still offers the choice
// answered: the answer waits for the redrawn dialog to take keys and is
// typed once, instead of failing with not_waiting.
func TestScenario_AnAnswerToADialogRedrawnBeforeItTakesKeysIsTyped(t *testing.T) {
	var mu sync.Mutex
	prompts := map[uint64]bool{}
	f := startScript(t, resizeRedrawScript, api.WaitingPermission, func(f *fixture) {
		f.onEvent = func(ev supervise.Event) {
			if ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.PromptID != 0 {
				mu.Lock()
				prompts[ev.Agent.PromptID] = true
				mu.Unlock()
			}
		}
	})
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "claude", Choice: "Yes"}, &res)
	if strings.Join(res.Keys, " ") != "Enter" {
		t.Fatalf("keys %q", res.Keys)
	}
	screen := f.waitScreen("claude", "got ")
	if got := strings.Join(strings.Fields(strings.SplitN(screen, "\n", 2)[0]), " "); got != `got \r dropped 0` {
		t.Fatalf("the program read %q, want Enter after the redraw, none dropped", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) < 2 {
		t.Fatalf("the redraw was not read as a new prompt (prompt ids %v): the test did not exercise the answer across it", prompts)
	}
}

func TestSameQuestionIsTheAnsweredChoiceOnTheSamePrompt(t *testing.T) {
	rule := &agent.Rule{Name: "permission"}
	was := supervise.AgentStatus{RunID: 3, Rule: rule, AgentView: api.AgentView{AgentState: api.AgentWaiting, WaitingFor: api.WaitingPermission,
		Prompt: "touch x", Choices: []string{"Yes", "Yes, and always allow access to /tmp/wo rk", "No"}, PromptID: 1}}
	rewrapped := was
	rewrapped.Choices = []string{"Yes", "Yes, and always allow access to /tmp/work", "No"}
	rewrapped.PromptID = 2
	for _, c := range []struct {
		name string
		now  func(s *supervise.AgentStatus)
		i    int
		same bool
	}{
		{"another choice rewrapped", func(*supervise.AgentStatus) {}, 0, true},
		{"the answered choice itself changed", func(*supervise.AgentStatus) {}, 1, false},
		{"another command", func(s *supervise.AgentStatus) { s.Prompt = "rm -rf x" }, 0, false},
		{"another kind of wait", func(s *supervise.AgentStatus) { s.WaitingFor = api.WaitingChoice }, 0, false},
		{"a choice more", func(s *supervise.AgentStatus) { s.Choices = append(slices.Clone(s.Choices), "Maybe") }, 0, false},
		{"another run", func(s *supervise.AgentStatus) { s.RunID = 4 }, 0, false},
		{"no longer waiting", func(s *supervise.AgentStatus) { s.AgentState = api.AgentWorking }, 0, false},
		{"no rule reads it (a hook's word)", func(s *supervise.AgentStatus) { s.Rule = nil }, 0, false},
	} {
		now := rewrapped
		now.Choices = slices.Clone(rewrapped.Choices)
		c.now(&now)
		if got := sameQuestion(was, now, c.i); got != c.same {
			t.Errorf("%s: sameQuestion = %v, want %v", c.name, got, c.same)
		}
	}
}
