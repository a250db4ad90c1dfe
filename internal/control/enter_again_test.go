package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/testenv"
)

// lossyInput draws Gemini CLI's empty prompt (the adapter's ready rule),
// takes a bracketed paste into its input box (a screen no rule reads),
// and takes the first Enter after it as a newline in the box, as Gemini
// 0.61.0 does within 40 ms of a paste; then, like a loaded agent
// redrawing, it is busy for as many seconds as its argument says. Only a
// second Enter submits: the box empties and it says what it got.
const lossyInput = `import os, sys, time, tty
tty.setraw(0)
os.write(1, b"\x1b[?2004h")
def draw(*lines):
    os.write(1, b"\x1b[2J\x1b[H" + "\r\n".join(lines).encode())
draw(" > Type your message or @path/to/file")
buf, text, enters = b"", None, 0
while True:
    buf += os.read(0, 4096)
    while True:
        s, e = buf.find(b"\x1b[200~"), buf.find(b"\x1b[201~")
        if s >= 0 and e > s:
            text, buf = buf[s+6:e].decode(), buf[:s] + buf[e+6:]
            draw(" > " + text)
        elif buf[:1] == b"\r" and text is not None:
            buf = buf[1:]
            enters += 1
            if enters == 1:
                draw(" > " + text, "   ")
                end = time.time() + float(sys.argv[1])
                while time.time() < end:
                    pass
            else:
                draw("submitted: " + text, "", " > Type your message or @path/to/file")
                text = None
        elif buf[:1] == b"\r":
            buf = buf[1:]
        else:
            break
`

// TestScenario_AGeminiPromptWhoseEnterWentIntoItsInputIsSubmitted: a send
// whose Enter the agent took as a newline in its input box is submitted
// by the Enter written again, whether the agent then stays busy (the
// busy floor is no sign that the send was taken, only a rule reading the
// screen is) or idle (its ready rule no longer reads the screen, though
// the state reads ready as before).
func TestScenario_AGeminiPromptWhoseEnterWentIntoItsInputIsSubmitted(t *testing.T) {
	for _, busy := range []string{"1", "0"} {
		t.Run("busy "+busy+" s", func(t *testing.T) {
			f := readyFake(t, "gem", "gemini", lossyInput, busy)
			f.mustCall(api.OpSend, api.SendArgs{Name: "gem", Text: "fix the bug", Enter: true}, nil)
			if screen := f.waitScreen("gem", "submitted: "); !strings.Contains(screen, "submitted: fix the bug") {
				t.Fatalf("the screen after the send:\n%s", screen)
			}
		})
	}
}

// lostEnter draws Cline's first screen, its empty input box, takes a
// bracketed paste into the box (the adapter's typed rule: ready, the
// text not sent) and loses the first Enter after it. The next submits.
const lostEnter = `import os, tty
tty.setraw(0)
os.write(1, b"\x1b[?2004h")
def draw(*lines):
    os.write(1, b"\x1b[2J\x1b[H" + "\r\n".join(lines).encode())
def box(text):
    return ["\u2500" * 40, "\u276f " + text, "\u2500" * 40, " test-model (0) $0.00   \u25cb Plan \u25cf Act (Tab)"]
draw("What can I do for you?", *box("What can I do for you?"))
buf, text, enters = b"", None, 0
while True:
    buf += os.read(0, 4096)
    s, e = buf.find(b"\x1b[200~"), buf.find(b"\x1b[201~")
    if s >= 0 and e > s:
        text, buf = buf[s+6:e].decode(), buf[:s] + buf[e+6:]
        draw("What can I do for you?", *box(text))
    while b"\r" in buf:
        buf = buf.replace(b"\r", b"", 1)
        if text is None:
            continue
        enters += 1
        if enters > 1:
            draw(" \u276f " + text, "", " * submitted: " + text, "", *box("Ask anything..."))
            text = None
`

// TestScenario_AClinePromptWhoseEnterWasLostIsSubmitted: a send whose
// Enter the agent lost, its text left in the input box (a screen the
// adapter reads as ready, typed), is submitted by the Enter written
// again.
func TestScenario_AClinePromptWhoseEnterWasLostIsSubmitted(t *testing.T) {
	f := readyFake(t, "cl", "cline", lostEnter)
	f.mustCall(api.OpSend, api.SendArgs{Name: "cl", Text: "fix the bug", Enter: true}, nil)
	if screen := f.waitScreen("cl", "submitted: "); !strings.Contains(screen, "submitted: fix the bug") {
		t.Fatalf("the screen after the send:\n%s", screen)
	}
}

// readyFake starts a harness NAME of agent running a python3 script (a
// fake of the agent's screens) with args, and waits until it is ready.
func readyFake(t *testing.T, name, agent, script string, args ...string) *fixture {
	t.Helper()
	testenv.Program(t, "python3")
	path := filepath.Join(t.TempDir(), "fake.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := strconv.Quote(path)
	for _, a := range args {
		argv += ", " + strconv.Quote(a)
	}
	f := newFixture(t, fmt.Sprintf("[harness.%s]\ncmd = \"python3\"\nargs = [%s]\nagent = %q\nmcp_wire = false\nstop_grace = 2\n", name, argv, agent))
	f.mustCall(api.OpStart, api.NamesArgs{Name: name}, nil)
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: name, State: []api.AgentState{api.AgentReady}, TimeoutS: 30}, &w)
	if w.TimedOut {
		t.Fatalf("never ready:\n%s", f.screenOf(name))
	}
	return f
}
