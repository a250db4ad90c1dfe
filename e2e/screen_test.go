//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/term/termtest"
)

// childEnv makes this test binary a harness's program instead of the tests
// (TestMain): its value is the mode.
const childEnv = "HARNESS_E2E_CHILD"

// runChild is the program of a test harness:
//
//	tui  termtest.DrawTUI on the PTY, then sleep
func runChild(mode string) int {
	switch mode {
	case "tui":
		termtest.DrawTUI(os.Stdout)
		time.Sleep(time.Hour)
		return 0
	case "sizes":
		return sizesChild()
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// childHarness is a harness table running this test binary in mode.
func childHarness(name, mode, extra string) string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("[harness.%s]\ncmd = %q\nenv = { %s = %q }\nstop_grace = 2\n%s\n", name, exe, childEnv, mode, extra)
}

// childrenLeft lists live processes of this test binary other than this
// one: harnesses a daemon failed to end.
func childrenLeft() []int {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return procsLeft(func(pid int) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		return err == nil && exe == self
	})
}

// screenJSON is `harness screen --json`.
type screenJSON struct {
	Name   string `json:"name"`
	RunID  uint64 `json:"run_id"`
	Cols   int    `json:"cols"`
	Rows   int    `json:"rows"`
	Cursor struct {
		Row     int  `json:"row"`
		Col     int  `json:"col"`
		Visible bool `json:"visible"`
	} `json:"cursor"`
	AltScreen  bool     `json:"alt_screen"`
	Activity   string   `json:"activity"`
	IdleS      float64  `json:"idle_s"`
	Lines      []string `json:"lines"`
	Scrollback []string `json:"scrollback"`
	Note       string   `json:"note"`
}

// entriesOf is the text of a harness's output entries (`logs --json`).
func (f *fleet) entriesOf(name string) []string {
	f.T.Helper()
	var s struct {
		Entries []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"entries"`
	}
	f.MustJSON(&s, "logs", name, "--lines", "1000")
	var out []string
	for _, e := range s.Entries {
		if e.Kind == "output" {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestScenario_TUIScreenAndEntriesEndToEnd: a child drawing like a TUI
// (cursor-forward gaps, a CR progress bar, alternate-screen redraws, wide
// and combining characters) shows its words with their spaces in
// `harness screen`, and `harness logs` holds each line once.
func TestScenario_TUIScreenAndEntriesEndToEnd(t *testing.T) {
	f := newFleet(t, childHarness("tui", "tui", "idle_after = 0.5"))
	f.MustRun("start", "tui")
	f.MustRun("wait", "tui", "--idle", "1s", "--timeout", "60s")

	var s screenJSON
	f.MustJSON(&s, "screen", "tui")
	want := termtest.TUIRows
	if s.Cols != 120 || s.Rows != 40 || len(s.Lines) != 40 || s.AltScreen || !s.Cursor.Visible || s.RunID == 0 || s.Activity != "idle" {
		t.Fatalf("screen --json: %+v", s)
	}
	if !slices.Equal(s.Lines[:len(want)], want) {
		t.Fatalf("screen rows %q, want %q", s.Lines[:len(want)], want)
	}
	if s.Cursor.Row != 4 || s.Cursor.Col != 0 {
		t.Errorf("cursor at %d,%d, want below done", s.Cursor.Row, s.Cursor.Col)
	}
	// The text form is the rows down to the last one with text.
	if out := f.MustRun("screen", "tui"); out != strings.Join(want[:len(want)-1], "\n")+"\n" {
		t.Errorf("harness screen printed %q", out)
	}
	var colours screenJSON
	f.MustJSON(&colours, "screen", "tui", "--ansi")
	if !strings.Contains(colours.Lines[0], termtest.TUIColour) || !strings.Contains(colours.Lines[0], "Unable") {
		t.Errorf("screen --ansi row 0 lost its colour: %q", colours.Lines[0])
	}
	if got := f.entriesOf("tui"); !slices.Equal(got, termtest.TUIEntries) {
		t.Fatalf("logs entries\n got %q\nwant %q", got, termtest.TUIEntries)
	}
	if raw := f.MustRun("logs", "tui", "--raw"); !strings.Contains(raw, "\x1b[9Gto") {
		t.Errorf("logs --raw lost the sequences: %q", raw[:min(len(raw), 80)])
	}
}

// burstConfig prints for about 1.5 s (each line with the time it was
// printed, in ns), then falls silent.
const burstConfig = `
[harness.burst]
cmd = "sh"
args = ["-c", "i=0; while [ $i -lt 30 ]; do echo busy $i $(date +%s%N); i=$((i+1)); sleep 0.05; done; exec sleep 100000"]
idle_after = 0.5
stop_grace = 2
`

// tickerConfig never falls silent.
const tickerConfig = `
[harness.ticker]
cmd = "sh"
args = ["-c", "while :; do echo tick; sleep 0.1; done"]
idle_after = 0.5
stop_grace = 2
`

// TestScenario_WaitIdleReturnsAfterTheChildFallsSilent: `harness wait
// --idle` returns 0 only once the child has stopped printing for that long.
func TestScenario_WaitIdleReturnsAfterTheChildFallsSilent(t *testing.T) {
	f := newFleet(t, burstConfig)
	f.MustRun("start", "burst")
	out, errOut, code := f.Run("wait", "burst", "--idle", "1s", "--timeout", "60s")
	returned := time.Now()
	if code != 0 || !strings.Contains(out, "burst: idle for") {
		t.Fatalf("wait: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var s struct {
		Entries []struct {
			Time time.Time `json:"time"`
			Text string    `json:"text"`
		} `json:"entries"`
	}
	f.MustJSON(&s, "logs", "burst", "--lines", "1000")
	last := s.Entries[len(s.Entries)-1]
	var n int
	var printed int64
	if _, err := fmt.Sscanf(last.Text, "busy %d %d", &n, &printed); err != nil || n != 29 {
		t.Fatalf("wait returned before the child was done printing: last entry %+v", last)
	}
	if quiet := returned.Sub(time.Unix(0, printed)); quiet < time.Second {
		t.Fatalf("wait --idle 1s returned %v after the last output", quiet)
	}
	var w struct {
		Name     string  `json:"name"`
		IdleS    float64 `json:"idle_s"`
		TimedOut bool    `json:"timed_out"`
	}
	f.MustJSON(&w, "wait", "burst", "--idle", "1s")
	if w.Name != "burst" || w.IdleS < 1 || w.TimedOut {
		t.Fatalf("wait --json: %+v", w)
	}
}

// TestScenario_WaitTimesOutWhileTheChildKeepsPrinting: exit 124.
func TestScenario_WaitTimesOutWhileTheChildKeepsPrinting(t *testing.T) {
	f := newFleet(t, tickerConfig)
	f.MustRun("start", "ticker")
	start := time.Now()
	out, errOut, code := f.Run("wait", "ticker", "--idle", "1s", "--timeout", "3s")
	took := time.Since(start)
	if code != 124 || !strings.Contains(errOut, "not idle") {
		t.Fatalf("wait: exit %d, want 124\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if took < 3*time.Second || took > 20*time.Second {
		t.Fatalf("wait --timeout 3s took %v", took)
	}
	var s screenJSON
	f.MustJSON(&s, "screen", "ticker")
	if s.Activity != "busy" || s.IdleS != 0 || !strings.Contains(strings.Join(s.Lines, "\n"), "tick") {
		t.Fatalf("screen of a printing harness: %+v", s)
	}
}

// TestCLI_ScreenAndWaitRefusals: a unit without a process, an upstream,
// bad arguments and unknown names fail clearly, with their codes.
func TestCLI_ScreenAndWaitRefusals(t *testing.T) {
	f := newFleet(t, sleeperConfig+upstreamTable("up", "refusals-inst", ""))
	out, errOut, code := f.Run("wait", "sleeper", "--idle", "1s")
	if code == 0 || code == 124 || !strings.Contains(errOut, "sleeper is stopped") || !strings.Contains(errOut, "not_running") {
		t.Fatalf("wait on a stopped harness: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for args, want := range map[string]string{
		"screen sleeper":                       "not_running",
		"wait sleeper --idle 1s":               "not_running",
		"screen mcp.up":                        "invalid_argument",
		"wait mcp.up --idle 1s":                "invalid_argument",
		"screen ghost":                         "unknown_harness",
		"wait ghost --idle 1s":                 "unknown_harness",
		"wait sleeper":                         "invalid_argument",
		"wait sleeper --idle 1s --timeout 48h": "invalid_argument",
		"wait sleeper --idle -1s":              "invalid_argument",
		"screen sleeper --scrollback -1":       "invalid_argument",
		"screen sleeper --scrollback 100000":   "invalid_argument",
	} {
		out, _, code := f.Run(append(strings.Fields(args), "--json")...)
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &body); err != nil || code != 1 || body.Error.Code != want {
			t.Errorf("harness %s --json: exit %d, %s; want code %s", args, code, out, want)
		}
	}
}

// TestScenario_ScreenScrollback: lines that scrolled off come back with
// --scrollback, oldest first, right above the screen's first row.
func TestScenario_ScreenScrollback(t *testing.T) {
	f := newFleet(t, `
[harness.long]
cmd = "sh"
args = ["-c", "i=1; while [ $i -le 60 ]; do echo $i; i=$((i+1)); done; exec sleep 100000"]
idle_after = 0.3
stop_grace = 2
`)
	f.MustRun("start", "long")
	f.MustRun("wait", "long", "--idle", "0.5s", "--timeout", "30s")
	var s screenJSON
	f.MustJSON(&s, "screen", "long", "--scrollback", "5")
	first, err := strconv.Atoi(s.Lines[0])
	if err != nil || s.Lines[len(s.Lines)-2] != "60" || len(s.Scrollback) != 5 {
		t.Fatalf("screen: lines %q, scrollback %q", s.Lines, s.Scrollback)
	}
	for i, l := range s.Scrollback {
		if l != strconv.Itoa(first-5+i) {
			t.Fatalf("scrollback %q above first row %d", s.Scrollback, first)
		}
	}
	out := f.MustRun("screen", "long", "--scrollback", "2")
	if want := fmt.Sprintf("%d\n%d\n%d\n", first-2, first-1, first); !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "\n60\n") {
		t.Fatalf("harness screen --scrollback 2 printed %q", out)
	}
}

// TestScenario_BusyIdleEventsOnTheSubscription: a subscriber sees the
// harness turn busy when it prints and idle once it is quiet.
func TestScenario_BusyIdleEventsOnTheSubscription(t *testing.T) {
	f := newFleet(t, burstConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.MustRun("start", "burst")
	var got []api.Event
	for len(got) < 2 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("subscription ended after %+v", got)
			}
			if ev.Kind == api.EventActivity && ev.Unit == "burst" {
				got = append(got, ev)
			}
		case <-ctx.Done():
			t.Fatalf("activity events so far: %+v", got)
		}
	}
	busy, idle := got[0], got[1]
	if busy.Activity != api.ActivityBusy || idle.Activity != api.ActivityIdle || busy.RunID == 0 || idle.RunID != busy.RunID {
		t.Fatalf("activity events %+v", got)
	}
	// busy carries when output resumed, idle when it stopped: 30 lines
	// 50 ms apart lie between.
	if d := idle.Time.Sub(busy.Time); d < time.Second || d > 10*time.Second {
		t.Fatalf("busy at %v, idle from %v: %v apart", busy.Time, idle.Time, d)
	}
	var us []map[string]any
	f.MustJSON(&us, "list")
	if us[0]["activity"] != "idle" || us[0]["idle_since"] == nil {
		t.Fatalf("list after the idle event: %v", us[0])
	}
	if out := f.MustRun("list"); !strings.Contains(out, "ACTIVITY") || !strings.Contains(out, "running  idle ") {
		t.Errorf("harness list shows no activity:\n%s", out)
	}
	if out := f.MustRun("describe", "burst"); !strings.Contains(out, "activity:       idle ") {
		t.Errorf("harness describe shows no activity:\n%s", out)
	}
}
