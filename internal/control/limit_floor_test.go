package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/testenv"
)

// lateLimit draws Cline's first screen, its empty input box (the
// adapter's ready rule). A paste goes into the box, and the program is
// busy a while with it there (a screen no rule reads: the floor's
// working); then, as a resumed Cline that has loaded its conversation,
// it draws the old one, ending in the usage limit that parked the run
// before, and stays on it a while. An Enter submits.
const lateLimit = `import os, time, tty
tty.setraw(0)
os.write(1, b"\x1b[?2004h")
def draw(*lines):
    os.write(1, b"\x1b[2J\x1b[H" + "\r\n".join(lines).encode())
foot = ["\u2500" * 40, " test-model (0) $0.00   \u25cb Plan \u25cf Act (Tab)"]
def box(text):
    return ["\u2500" * 40, "\u276f " + text] + foot
draw("What can I do for you?", *box("What can I do for you?"))
old = [" \u276f Go on.", "", " * Error: You exceeded your current quota. Usage limit reached, resets 5:04pm", ""]
buf, text = b"", None
while True:
    buf += os.read(0, 4096)
    s, e = buf.find(b"\x1b[200~"), buf.find(b"\x1b[201~")
    if s >= 0 and e > s:
        text, buf = buf[s+6:e].decode(), buf[:s] + buf[e+6:]
        draw("What can I do for you?", *box(text))
        end = time.time() + 1
        while time.time() < end:
            pass
        draw(*old, *box(text))
        time.sleep(1.5)
    if text is not None and b"\r" in buf:
        draw(*old, " \u276f " + text, "", " * submitted: " + text, "", *box("Ask anything..."))
        buf, text = b"", None
`

// TestScenario_AnOldLimitDrawnAfterAPasteDoesNotParkTheRun: a resumed
// agent that draws its old conversation late, its usage limit last,
// after a prompt was pasted into its input box, is not parked for that
// limit: the program merely busy with the paste (no rule reads its
// screen) is no sign that this run worked, so the limit is not this
// run's. The send goes in whole and is submitted.
func TestScenario_AnOldLimitDrawnAfterAPasteDoesNotParkTheRun(t *testing.T) {
	testenv.Program(t, "python3")
	script := filepath.Join(t.TempDir(), "late.py")
	if err := os.WriteFile(script, []byte(lateLimit), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "[harness.cl]\ncmd = \"python3\"\nargs = [\""+script+"\"]\nagent = \"cline\"\nmcp_wire = false\nstop_grace = 2\n")
	f.mustCall(api.OpStart, api.NamesArgs{Name: "cl"}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "cl", State: []api.AgentState{api.AgentReady}, TimeoutS: 30}, &w)
	if w.TimedOut {
		t.Fatalf("never ready:\n%s", f.screenOf("cl"))
	}
	f.mustCall(api.OpSend, api.SendArgs{Name: "cl", Text: "Which file?", Enter: true}, nil)
	if screen := f.waitScreen("cl", "submitted: "); !strings.Contains(screen, "submitted: Which file?") {
		t.Fatalf("the screen after the send:\n%s", screen)
	}
	var units []api.UnitInfo
	f.mustCall(api.OpList, api.ListArgs{}, &units)
	for _, u := range units {
		if u.Name == "cl" && (u.Hold != nil || u.PID == 0) {
			t.Errorf("parked for the old limit: %+v", u)
		}
	}
}
