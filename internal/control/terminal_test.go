package control

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// printer prints its words with cursor moves between them, then nothing.
const printer = `[harness.printer]
cmd = "sh"
args = ["-c", "printf 'one\\033[6Gtwo\\r\\nthree\\r\\n'; exec sleep 100000"]
idle_after = 0.3
stop_grace = 2
`

// ticker never falls silent for long.
const ticker = `[harness.ticker]
cmd = "sh"
args = ["-c", "while :; do echo tick; sleep 0.05; done"]
idle_after = 0.3
stop_grace = 2
`

const upstream = "[mcp.up]\ncmd = \"sh\"\nargs = [\"-c\", \"exec sleep 100000\"]\nstop_grace = 1\n"

func TestScreen_RowsActivityAndRefusals(t *testing.T) {
	f := newFixture(t, printer+ticker+sleeper("idle", "")+upstream, func(f *fixture) { f.upstreams = &fakeBroker{} })
	for _, name := range []string{"printer", "ticker"} {
		f.mustCall(api.OpStart, api.NamesArgs{Name: name}, nil)
	}
	f.waitStates(map[string]string{"printer": "running", "ticker": "running"})

	var s api.Screen
	f.mustCall(api.OpScreen, api.ScreenArgs{Name: "printer", IdleS: 0.5, TimeoutS: 20}, &s)
	if s.Note != "" || s.Activity != api.ActivityIdle || s.IdleS < 0.5 || s.IdleSince == nil {
		t.Fatalf("screen after idle: %+v", s)
	}
	if len(s.Lines) != 40 || s.Lines[0] != "one  two" || s.Lines[1] != "three" || s.Cols != 120 || s.RunID == 0 {
		t.Fatalf("screen rows %q (%dx%d, run %d)", s.Lines[:3], s.Cols, s.Rows, s.RunID)
	}
	if s.Scrollback == nil {
		t.Fatal("scrollback is null, want []")
	}

	// A child that keeps printing is busy: screen's wait times out and says so.
	start := time.Now()
	s = api.Screen{}
	f.mustCall(api.OpScreen, api.ScreenArgs{Name: "ticker", IdleS: 1, TimeoutS: 0.8}, &s)
	if !strings.Contains(s.Note, "timed out") || s.Activity != api.ActivityBusy || s.IdleSince != nil || !strings.Contains(s.Lines[0], "tick") {
		t.Fatalf("screen of a busy harness after its timeout: %+v", s)
	}
	if d := time.Since(start); d < 800*time.Millisecond || d > 10*time.Second {
		t.Fatalf("the wait took %v for a timeout of 0.8s", d)
	}

	// list: activity for the harnesses with a process only.
	var units []api.UnitInfo
	f.mustCall(api.OpList, api.ListArgs{}, &units)
	for _, u := range units {
		switch u.Name {
		case "printer", "ticker":
			if u.Activity == "" || u.IdleS == nil {
				t.Errorf("list row of running %s lacks activity: %+v", u.Name, u)
			}
		default:
			if u.Activity != "" || u.IdleS != nil || u.IdleSince != nil {
				t.Errorf("list row of stopped %s has activity: %+v", u.Name, u)
			}
		}
	}
	res, err := f.c.Call(t.Context(), api.Caller{Kind: api.Operator}, api.OpList, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if strings.Count(string(b), `"activity"`) != 2 {
		t.Fatalf("list JSON: %s", b)
	}

	refusals := []struct {
		op   string
		args any
		code errcode.Code
	}{
		{api.OpScreen, api.ScreenArgs{Name: "ghost"}, errcode.UnknownHarness},
		{api.OpScreen, api.ScreenArgs{Name: "idle"}, errcode.NotRunning},
		{api.OpWait, api.WaitArgs{Name: "idle", IdleS: 1}, errcode.NotRunning},
		{api.OpScreen, api.ScreenArgs{Name: "mcp.up"}, errcode.InvalidArgument},
		{api.OpWait, api.WaitArgs{Name: "mcp.up", IdleS: 1}, errcode.InvalidArgument},
		{api.OpScreen, api.ScreenArgs{Name: "printer", Scrollback: -1}, errcode.InvalidArgument},
		{api.OpScreen, api.ScreenArgs{Name: "printer", Scrollback: MaxScrollback + 1}, errcode.InvalidArgument},
		{api.OpScreen, api.ScreenArgs{Name: "printer", IdleS: -1}, errcode.InvalidArgument},
		{api.OpScreen, api.ScreenArgs{Name: "printer", IdleS: 1, TimeoutS: 1e10}, errcode.InvalidArgument},
		{api.OpWait, api.WaitArgs{Name: "printer", IdleS: MaxTriggerTimeout.Seconds() + 1}, errcode.InvalidArgument},
		{api.OpWait, api.WaitArgs{Name: "printer", IdleS: 1, TimeoutS: -1}, errcode.InvalidArgument},
		{api.OpWait, map[string]any{"name": "printer", "idle": 1}, errcode.InvalidArgument},
	}
	for _, r := range refusals {
		if err := f.call(r.op, r.args, nil); errcode.Of(err) != r.code {
			t.Errorf("%s %+v: %v, want %s", r.op, r.args, err, r.code)
		}
	}
	if _, err := seconds("idle_s", math.NaN()); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("NaN seconds: %v", err)
	}
}

func TestWait_IdleTimeoutAndARunThatEnds(t *testing.T) {
	f := newFixture(t, printer+ticker+`[harness.brief]
cmd = "sh"
args = ["-c", "echo bye; sleep 0.5; echo gone; exec sleep 0.1"]
restart = "no"
idle_after = 5
`)
	for _, name := range []string{"printer", "ticker"} {
		f.mustCall(api.OpStart, api.NamesArgs{Name: name}, nil)
	}
	var w api.WaitResult
	f.mustCall(api.OpWait, api.WaitArgs{Name: "printer", IdleS: 0.6, TimeoutS: 20}, &w)
	if w.TimedOut || w.IdleS < 0.6 || w.Name != "printer" {
		t.Fatalf("wait for printer: %+v", w)
	}
	f.mustCall(api.OpWait, api.WaitArgs{Name: "ticker", IdleS: 1, TimeoutS: 2}, &w)
	if !w.TimedOut {
		t.Fatalf("wait for ticker: %+v", w)
	}
	// brief exits within its idle_after: the wait must not call that idle.
	f.mustCall(api.OpStart, api.NamesArgs{Name: "brief"}, nil)
	err := f.call(api.OpWait, api.WaitArgs{Name: "brief", IdleS: 1, TimeoutS: 20}, nil)
	if errcode.Of(err) != errcode.NotRunning || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("wait for a harness that exits: %v", err)
	}
}
