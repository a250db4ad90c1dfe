package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/term"
)

// pasteDrawHelper takes keys raw with bracketed paste on and, after each
// read, waits HELPER_DRAW_AFTER (a program slow to draw) and draws what it
// read: how long after its previous draw the read came, and how many
// bytes were already queued behind it when it drew. With HELPER_BUSY it
// then computes for that long (a timer's work after the draw) and says how
// many bytes were queued when it was done.
func pasteDrawHelper() (int, bool) {
	if err := rawStdin(); err != nil {
		fmt.Println("raw:", err)
		return 3, true
	}
	delay, _ := time.ParseDuration(os.Getenv("HELPER_DRAW_AFTER"))
	busy, _ := time.ParseDuration(os.Getenv("HELPER_BUSY"))
	os.Stdout.WriteString("\x1b[?2004hready\r\n")
	drawn := time.Now()
	buf := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			return 0, true
		}
		since := time.Since(drawn)
		time.Sleep(delay)
		queued, _ := queuedInput(0)
		fmt.Printf("read %q %dms after the last draw; %d queued\r\n", buf[:n], since.Milliseconds(), queued)
		drawn = time.Now()
		if busy > 0 {
			// A process of its group computes on its main thread, as
			// Node's event loop does.
			spin := exec.Command("timeout", "--foreground", strconv.FormatFloat(busy.Seconds(), 'f', 3, 64), "sh", "-c", "while :; do :; done")
			if err := spin.Run(); err != nil && spin.ProcessState.ExitCode() != 124 {
				fmt.Printf("spin: %v\r\n", err)
			}
			queued, _ = queuedInput(0)
			fmt.Printf("busy %s; %d queued\r\n", busy, queued)
			// Done with the paste only now: a guard of its own (Gemini
			// CLI's 40 ms) starts here, as its timer starts when its
			// handler has run.
			drawn = time.Now()
		}
	}
}

var readLine = regexp.MustCompile(`^read "(.*)" (\d+)ms after the last draw; (\d+) queued$`)

// helperRead is one line of pasteDrawHelper.
type helperRead struct {
	data   string // %q-quoted, without the quotes
	after  time.Duration
	queued int
}

// TestScenario_AnEnterAfterAPasteWaitsForTheProgramToDrawIt: a Typing
// with SubmitAfter (Gemini CLI's EnterAfterPaste) writes its Enter only
// once the program has read the paste and drawn it, and SubmitAfter after
// that draw: a program that draws 300 ms after it reads finds nothing
// queued behind the paste when it draws and reads the Enter alone, at
// least SubmitAfter after its draw; one busy for 500 ms after its draw
// has nothing queued when it is done, and reads the Enter at least
// SubmitAfter after that (a guard timer of its own starts only then). One that draws nothing within DrawWait
// still gets its Enter, apart, after DrawWait. Without SubmitAfter the
// Enter goes with the paste, as a terminal sends them: in the same read or
// queued at the draw.
func TestScenario_AnEnterAfterAPasteWaitsForTheProgramToDrawIt(t *testing.T) {
	after := agent.MustLookup(agent.Gemini).EnterAfterPaste
	if after <= 0 {
		t.Fatal("the gemini adapter has no EnterAfterPaste")
	}
	paste := []byte("\x1b[200~fix the bug\x1b[201~")
	apart := Typing{Data: paste, Submit: []byte("\r"), SubmitAfter: after}
	cases := []struct {
		name            string
		drawAfter, busy time.Duration
		typing          Typing
	}{
		{"apart, after the draw", 300 * time.Millisecond, 0, apart},
		{"apart, once the program is done with its work", 0, 500 * time.Millisecond, apart},
		{"apart, no draw within DrawWait", DrawWait + 500*time.Millisecond, 0, apart},
		{"together", 300 * time.Millisecond, 0, Typing{Data: append(paste, '\r')}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, helperCfg("agent", "pastedraw", map[string]string{"HELPER_DRAW_AFTER": tc.drawAfter.String(), "HELPER_BUSY": tc.busy.String()}))
			e.start()
			lines := func() []string { return e.u.Term().Snapshot(term.SnapshotOptions{}).Lines }
			e.waitFor("ready", func() bool {
				return strings.Contains(strings.Join(lines(), "\n"), "ready") && e.u.Term().BracketedPaste()
			})
			start := time.Now()
			if _, err := e.u.Type(t.Context(), tc.typing); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			var reads []helperRead
			e.waitFor("the Enter read", func() bool {
				reads = reads[:0]
				for _, l := range lines() {
					m := readLine.FindStringSubmatch(strings.TrimSpace(l))
					if m == nil {
						continue
					}
					ms, _ := strconv.Atoi(m[2])
					q, _ := strconv.Atoi(m[3])
					reads = append(reads, helperRead{m[1], time.Duration(ms) * time.Millisecond, q})
				}
				return len(reads) > 0 && strings.HasSuffix(reads[len(reads)-1].data, `\r`)
			})
			t.Logf("Type took %s; reads %+v", took, reads)
			first := reads[0]
			if tc.typing.SubmitAfter == 0 {
				if len(reads) == 1 || first.queued > 0 {
					return // with the paste, or queued behind it
				}
				t.Fatalf("the Enter of one write came apart from its paste: %+v", reads)
			}
			if len(reads) != 2 || first.data != `\x1b[200~fix the bug\x1b[201~` || reads[1].data != `\r` {
				t.Fatalf("want the paste alone, then the Enter alone: %+v", reads)
			}
			if tc.drawAfter > DrawWait {
				if took < DrawWait {
					t.Errorf("the Enter was written %s after the paste, before DrawWait (%s)", took, DrawWait)
				}
				return
			}
			if first.queued != 0 {
				t.Errorf("the Enter was written before the program drew the paste: %+v", reads)
			}
			if reads[1].after < after {
				t.Errorf("the Enter came %s after the paste was drawn, want at least %s", reads[1].after, after)
			}
			if tc.busy > 0 && !slices.Contains(lines(), fmt.Sprintf("busy %s; 0 queued", tc.busy)) {
				t.Errorf("the Enter was written while the program was busy after its draw:\n%s", strings.Join(lines(), "\n"))
			}
		})
	}
}
