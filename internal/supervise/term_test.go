package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/term"
	"github.com/harness-dev/harness/internal/term/termtest"
)

// runTermHelper is the child side of the terminal tests. Modes:
//
//	tui        termtest.DrawTUI: cursor-forward gaps, a CR progress bar, an
//	           alternate-screen dialog redrawn many times, wide and
//	           combining characters; print "done", sleep
//	echo-loop  print $HELPER_N lines "line I at NANOS" every $HELPER_EVERY, sleep
//	winsize    print the PTY size at start and on every SIGWINCH, sleep
func runTermHelper(mode string) (int, bool) {
	switch mode {
	case "tui":
		termtest.DrawTUI(os.Stdout)
	case "echo-loop":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		every, _ := time.ParseDuration(os.Getenv("HELPER_EVERY"))
		for i := range n {
			fmt.Printf("line %d at %d\n", i, time.Now().UnixNano())
			time.Sleep(every)
		}
	case "winsize":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGWINCH)
		for {
			rows, cols, err := pty.Getsize(os.Stdin)
			if err != nil {
				fmt.Println("getsize:", err)
				return 3, true
			}
			fmt.Printf("size %dx%d\n", cols, rows)
			<-ch
		}
	case "agent":
		agentHelper()
	case "agentlate":
		agentLateHelper()
	case "agentrestart":
		agentRestartHelper()
	case "agenttrust":
		agentTrustHelper()
	case "agenttyped":
		agentTypedHelper()
	default:
		return runInputHelper(mode)
	}
	time.Sleep(time.Hour)
	return 0, true
}

func outputTexts(l *logs.Log) []string {
	ents, _ := l.EntriesAfter(0, 0)
	var out []string
	for _, e := range ents {
		if e.Kind == logs.KindOutput {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestScenario_TUIScreenAndEntries: a child drawing like a TUI on its PTY
// shows the words with their spaces on the screen, and its activity
// entries hold each line once however many frames it drew.
func TestScenario_TUIScreenAndEntries(t *testing.T) {
	e := newEnv(t, helperCfg("tui", "tui", nil))
	e.start()
	e.waitLog("done")
	s := e.u.Term().Snapshot(term.SnapshotOptions{ANSI: true})
	if s.Cols != 120 || s.Rows != 40 || s.AltScreen || !s.Cursor.Visible {
		t.Fatalf("snapshot %+v", s)
	}
	wantRows := termtest.TUIRows
	if !slices.Equal(s.Lines[:len(wantRows)], wantRows) {
		t.Fatalf("screen rows %q, want %q", s.Lines[:len(wantRows)], wantRows)
	}
	if !strings.Contains(s.ANSI[0], termtest.TUIColour) {
		t.Fatalf("ANSI row 0 lost its colour: %q", s.ANSI[0])
	}
	want := termtest.TUIEntries
	// "done" may be the cursor's last line: it is in once the unit is idle.
	e.waitFor("all entries", func() bool { return len(outputTexts(e.log)) >= len(want) })
	if got := outputTexts(e.log); !slices.Equal(got, want) {
		t.Fatalf("entries\n got %q\nwant %q", got, want)
	}
	if data, _, _ := e.log.Raw(0, 0); !strings.Contains(string(data), "\x1b[9Gto") {
		t.Fatalf("raw ring lost the sequences: %q", data[:min(len(data), 80)])
	}
}

// TestScenario_EchoLoopEntriesPromptly: a plain line program gives one
// entry per line, in order, and a follower does not wait long for each.
func TestScenario_EchoLoopEntriesPromptly(t *testing.T) {
	const n = 60
	e := newEnv(t, helperCfg("echo", "echo-loop", map[string]string{"HELPER_N": strconv.Itoa(n), "HELPER_EVERY": "25ms"}))
	e.start()
	var lags []time.Duration
	seen := 0
	e.waitFor(fmt.Sprintf("%d lines", n), func() bool {
		got := outputTexts(e.log)
		for ; seen < len(got); seen++ {
			var i int
			var at int64
			if _, err := fmt.Sscanf(got[seen], "line %d at %d", &i, &at); err != nil || i != seen {
				t.Fatalf("entry %d = %q", seen, got[seen])
			}
			lags = append(lags, time.Since(time.Unix(0, at)))
		}
		return seen == n
	})
	slices.Sort(lags)
	med, worst := lags[len(lags)/2], lags[len(lags)-1]
	t.Logf("entry lag: median %v, max %v", med, worst)
	// Two samples of 100ms; the bound leaves room for a loaded machine.
	if med > 500*time.Millisecond || worst > 2*time.Second {
		t.Fatalf("entries too late: median %v, max %v", med, worst)
	}
}

// TestScenario_BusyIdleEvents: output makes the harness busy, silence for
// idle_after makes it idle, and both changes are events.
func TestScenario_BusyIdleEvents(t *testing.T) {
	cfg := helperCfg("quiet", "print", map[string]string{"HELPER_TEXT": "a|b|c"})
	cfg.IdleAfter = 300 * time.Millisecond
	e := newEnv(t, cfg)
	e.start()
	acts := func() []string {
		var out []string
		for _, ev := range e.rec.all() {
			if ev.Kind == EventActivity {
				out = append(out, ev.Activity)
			}
		}
		return out
	}
	e.waitFor("busy then idle", func() bool { return slices.Equal(acts(), []string{"busy", "idle"}) })
	a, err := e.u.Term().WaitIdle(context.Background(), 500*time.Millisecond)
	if err != nil || a.State != term.Idle {
		t.Fatalf("WaitIdle = %+v, %v", a, err)
	}
	for _, ev := range e.rec.all() {
		if ev.Kind == EventActivity && (ev.Unit != "quiet" || ev.RunID == 0 || ev.Time.IsZero()) {
			t.Fatalf("event %+v", ev)
		}
	}
	if got := outputTexts(e.log); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("entries %q", got)
	}
}

// TestScenario_ResizeFollowsThePTY: Resize changes the size the child
// sees and the screen's; a stopped unit answers not running.
func TestScenario_ResizeFollowsThePTY(t *testing.T) {
	cfg := helperCfg("win", "winsize", nil)
	cfg.Cols, cfg.Rows = 100, 30
	e := newEnv(t, cfg)
	if err := e.u.Resize(context.Background(), 80, 24); !errors.Is(err, ErrNotRunning) || errcode.Of(err) != errcode.NotRunning {
		t.Fatalf("resize before start: %v", err)
	}
	e.start()
	e.waitLog("size 100x30")
	if err := e.u.Resize(context.Background(), 80, 24); err != nil {
		t.Fatal(err)
	}
	e.waitLog("size 80x24")
	if c, r := e.u.Term().Size(); c != 80 || r != 24 {
		t.Fatalf("term size %dx%d", c, r)
	}
	if st := e.u.Status(); st.Cols != 80 || st.Rows != 24 {
		t.Fatalf("status size %dx%d", st.Cols, st.Rows)
	}
	if err := e.u.Resize(context.Background(), 1, 24); err == nil {
		t.Fatal("a 1-column resize was accepted")
	}
	e.stop()
	e.start() // a new run takes the configured size again
	e.waitFor("second size 100x30", func() bool {
		n := 0
		for _, s := range outputTexts(e.log) {
			if s == "size 100x30" {
				n++
			}
		}
		return n == 2
	})
	if c, r := e.u.Term().Size(); c != 100 || r != 30 {
		t.Fatalf("term size after restart %dx%d", c, r)
	}
}

// TestScenario_AViewerNeverShrinksTheAgentBelowItsSize: a phone's 56
// columns reflowed an agent's dialogs for good (the last writer's size
// won), breaking a long path in a choice in two. A viewer's terminal
// grows the PTY, never shrinks it below the configured size; Resize
// itself (not a viewer's) still sets any size.
func TestScenario_AViewerNeverShrinksTheAgentBelowItsSize(t *testing.T) {
	cfg := helperCfg("win", "winsize", nil)
	cfg.Cols, cfg.Rows = 100, 30
	e := newEnv(t, cfg)
	e.start()
	e.waitLog("size 100x30")
	phone := attach(t, e.u, ViewerOptions{Cols: 56, Rows: 20})
	if c, r := e.u.Term().Size(); c != 100 || r != 30 {
		t.Fatalf("term size %dx%d after a 56x20 viewer attached", c, r)
	}
	// Each resize the phone asks is answered by the size in force, so
	// it shows the screen as the agent draws it.
	resize := func(cols, rows int, want string) {
		t.Helper()
		if err := phone.Resize(context.Background(), cols, rows); err != nil {
			t.Fatal(err)
		}
		e.waitLog("size " + want)
		for {
			_, ev, err := next(t, phone)
			if err != nil {
				t.Fatal(err)
			}
			if ev != nil && ev.Kind == api.AttachNotice {
				if got := fmt.Sprintf("%dx%d", ev.Cols, ev.Rows); got != want {
					t.Fatalf("notice %+v, want %s", ev, want)
				}
				return
			}
		}
	}
	resize(150, 20, "150x30")
	resize(56, 50, "100x50")
	if err := e.u.Resize(context.Background(), 80, 24); err != nil {
		t.Fatal(err)
	}
	e.waitLog("size 80x24")
}
