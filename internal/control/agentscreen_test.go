package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// clineScript draws Cline's permission dialog (3.0.65), reads one byte
// in raw mode, then shows it on a screen no rule of the adapter knows.
const clineScript = `stty raw -echo opost
printf ' * Let me run it.\r\n Cline needs permission\r\n Approve tool call?\r\n run_commands\r\n   $ touch x\r\n  [y] Approve   [n] Deny\r\n'
k=$(dd bs=1 count=1 2>/dev/null)
printf '\033[2J\033[HCline 9.0 got %s\r\nShall I go on? (yes/no)\r\n' "$k"
exec sleep 100000
`

// TestScenario_ClinesDialogIsAnsweredByItsLetterThenAnUnknownScreenIsSaid:
// Cline's dialog takes the choice's letter, which answer types as text;
// the screen after it is one the adapter has no rule for, and describe
// says so (agent_screen), the state being ready from activity.
func TestScenario_ClinesDialogIsAnsweredByItsLetterThenAnUnknownScreenIsSaid(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cline.sh")
	if err := os.WriteFile(script, []byte(clineScript), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "[harness.cline]\ncmd = \"sh\"\nargs = [\""+script+"\"]\nagent = \"cline\"\nstop_grace = 2\nidle_after = 0.3\n")
	f.mustCall(api.OpStart, api.NamesArgs{Names: []string{"cline"}}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "cline", State: []api.AgentState{api.AgentWaiting}, TimeoutS: 30}, &w)
	if w.TimedOut || w.WaitingFor != api.WaitingPermission || w.Prompt != "touch x" {
		t.Fatalf("the dialog is not seen waiting: %+v\n%s", w, f.screenOf("cline"))
	}
	var d api.Description
	f.mustCall(api.OpDescribe, api.NameArg{Name: "cline"}, &d)
	if d.AgentScreen == nil || !d.AgentScreen.Recognised || d.AgentScreen.Rule != "permission" {
		t.Errorf("agent_screen on the dialog: %+v", d.AgentScreen)
	}
	var res api.AnswerResult
	f.mustCall(api.OpAnswer, api.AnswerArgs{Name: "cline", Choice: "Approve"}, &res)
	if strings.Join(res.Keys, " ") != "y" {
		t.Fatalf("answer result %+v", res)
	}
	f.waitScreen("cline", "got y")
	f.mustCall(api.OpWait, api.WaitArgs{Name: "cline", State: []api.AgentState{api.AgentReady}, TimeoutS: 30}, &w)
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mustCall(api.OpDescribe, api.NameArg{Name: "cline"}, &d)
		if sc := d.AgentScreen; sc != nil && !sc.Recognised {
			if sc.UnrecognisedSince == nil || !strings.Contains(sc.Note, "never waiting") || d.AgentState != api.AgentReady {
				t.Errorf("describe of an unknown screen: %+v, agent %s", sc, d.AgentState)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe never said the screen is unknown: %+v\n%s", d.AgentScreen, f.screenOf("cline"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
