package control

import (
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// lateLimit draws Cline's first screen, its empty input box (the
// adapter's ready rule). Its first paste goes into the box, and the
// program is busy a while with it there (read as typed: were no rule to
// read it, the busy floor would say working); then, as a resumed Cline that has loaded its
// conversation, it draws the old one, ending in the usage limit that
// parked the run before, and stays on it a while. An Enter submits. The
// next prompt it works on, its spinner showing (the adapter's working
// rule), and then meets a usage limit of its own.
const lateLimit = `import os, time, tty
tty.setraw(0)
os.write(1, b"\x1b[?2004h")
def draw(*lines):
    os.write(1, b"\x1b[2J\x1b[H" + "\r\n".join(lines).encode())
foot = ["\u2500" * 40, " test-model (0) $0.00   \u25cb Plan \u25cf Act (Tab)"]
def box(text):
    return ["\u2500" * 40, "\u276f " + text] + foot
def busy(d):
    end = time.time() + d
    while time.time() < end:
        pass
draw("What can I do for you?", *box("What can I do for you?"))
conv = [" \u276f Go on.", "", " * Error: You exceeded your current quota. Usage limit reached, resets 5:04pm", ""]
buf, text, n = b"", None, 0
while True:
    buf += os.read(0, 4096)
    s, e = buf.find(b"\x1b[200~"), buf.find(b"\x1b[201~")
    if s >= 0 and e > s:
        text, buf = buf[s+6:e].decode(), buf[:s] + buf[e+6:]
        n += 1
        if n == 1:
            draw("What can I do for you?", *box(text))
            busy(1)
            draw(*conv, *box(text))
            time.sleep(1.5)
        else:
            draw(*conv, *box(text))
    if text is not None and b"\r" in buf:
        buf = b""
        conv += [" \u276f " + text, ""]
        if n == 1:
            conv += [" * submitted: " + text, ""]
            draw(*conv, *box("Ask anything..."))
        else:
            draw(*conv, " \u280b Thinking... (esc to cancel)", *box("Ask anything..."))
            busy(1)
            conv += [" * Error: You exceeded your current quota. Usage limit reached, resets 6:04pm", ""]
            draw(*conv, *box("Ask anything..."))
        text = None
`

// TestScenario_AnOldLimitDrawnAfterAPasteDoesNotParkTheRun: a resumed
// agent that draws its old conversation late, its usage limit last,
// after a prompt was pasted into its input box, is not parked for that
// limit: the program busy with the paste is no sign that this run worked
// (a resumed agent works once it has shown a prompt and then worked), so
// the limit is not this run's. The send goes in whole and is submitted.
// A limit the agent meets after it worked parks it.
func TestScenario_AnOldLimitDrawnAfterAPasteDoesNotParkTheRun(t *testing.T) {
	f := readyFake(t, "cl", "cline", lateLimit)
	row := func() api.UnitInfo {
		var units []api.UnitInfo
		f.mustCall(api.OpList, api.ListArgs{}, &units)
		for _, u := range units {
			if u.Name == "cl" {
				return u
			}
		}
		t.Fatal("no row for cl")
		return api.UnitInfo{}
	}
	f.mustCall(api.OpSend, api.SendArgs{Name: "cl", Text: "Which file?", Enter: true}, nil)
	if screen := f.waitScreen("cl", "submitted: "); !strings.Contains(screen, "submitted: Which file?") {
		t.Fatalf("the screen after the send:\n%s", screen)
	}
	if u := row(); u.Hold != nil || u.PID == 0 {
		t.Fatalf("parked for the old limit: %+v", u)
	}
	f.mustCall(api.OpSend, api.SendArgs{Name: "cl", Text: "Go on with it.", Enter: true}, nil)
	f.waitUntil("a hold for the run's own limit", func() bool { return row().Hold != nil })
	if h := row().Hold; h.Reason != api.HoldUsageLimit || !strings.Contains(h.Note, "6:04pm") {
		t.Errorf("hold %+v, want the usage limit that resets at 6:04pm", h)
	}
}
