package top

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// smallFleet is two global harnesses, a project's harness and job, and
// an upstream of each scope.
func smallFleet() *fakeDaemon {
	f := newFakeDaemon()
	f.addUnit("alpha", "running").PID = 101
	f.addUnit("beta", "stopped")
	f.addUnit("web/api", "running")
	next := time.Date(2026, 1, 2, 10, 30, 0, 0, time.Local)
	f.addUnit("web/nightly", "stopped").NextFire = &next
	f.ups = []api.UpstreamStatus{{Key: "gitea", State: "running", Tools: 12, Calls: api.UpstreamCallStats{CallStats: api.CallStats{Calls: 7}}}, {Key: "db", Project: "web", State: "failed", LastError: "exit 1"}}
	f.log("alpha", "alpha says hello")
	return f
}

// TestTableGroupsTheFleetByProject: headings per scope, harnesses then
// upstreams in each, every row with its state; the cursor starts on the
// first harness and the preview shows it.
func TestTableGroupsTheFleetByProject(t *testing.T) {
	d := newDriver(t, smallFleet(), 120, 30, nil)
	var got []string
	for _, l := range strings.Split(d.screen(), "\n")[2:9] {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"global",
		"alpha running - 0 - - - 101",
		"beta stopped - 0 - - - -",
		"mcp.gitea running 12 tools 0 - - 7 -",
		"project web",
		"api running - 0 - - - -",
		"nightly stopped - 0 - 10:30:00 - -",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table rows:\n%s\nwant:\n%s\nscreen:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), d.screen())
	}
	if l := d.line("mcp.db"); !strings.Contains(l, "failed") || !strings.Contains(l, "exit 1") {
		t.Errorf("upstream row %q lacks its state and last error", l)
	}
	if d.m.sel != "alpha" || !strings.Contains(d.screen(), "preview of alpha (running)") {
		t.Errorf("selection %q; screen:\n%s", d.m.sel, d.screen())
	}
	d.advance(selectDelay)
	if !strings.Contains(d.screen(), "alpha says hello") {
		t.Errorf("preview lacks alpha's output:\n%s", d.screen())
	}
	if title := strings.Split(d.screen(), "\n")[0]; !strings.Contains(title, "4 harnesses, 2 running · 2 upstreams") {
		t.Errorf("title %q", title)
	}
}

// TestStateEventFetchesOnlyThatUnit: a state change is one describe of
// the unit it names, after the debounce; nothing is re-listed.
func TestStateEventFetchesOnlyThatUnit(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	f.takeCalls()
	f.setState("beta", "running")
	d.event(api.Event{Kind: api.EventState, Unit: "beta", State: "running"})
	if calls := f.takeCalls(); len(calls) != 0 {
		t.Fatalf("calls before the debounce: %v", calls)
	}
	d.advance(DefaultDebounce)
	if calls := f.takeCalls(); !slices.Equal(calls, []string{"describe beta"}) {
		t.Fatalf("calls = %v, want [describe beta]", calls)
	}
	if l := d.line("beta"); !strings.Contains(l, "running") {
		t.Errorf("beta row %q, want running", l)
	}
}

// TestBurstOfEventsIsOneList: start --all's hundreds of events are one
// list, not a describe each.
func TestBurstOfEventsIsOneList(t *testing.T) {
	f := newFakeDaemon()
	for i := range 200 {
		f.addUnit(fmt.Sprintf("h%03d", i), "stopped")
	}
	d := newDriver(t, f, 100, 30, nil)
	f.takeCalls()
	for i := range 200 {
		name := fmt.Sprintf("h%03d", i)
		f.setState(name, "running")
		d.push(api.Event{Kind: api.EventState, Unit: name, State: "starting"},
			api.Event{Kind: api.EventState, Unit: name, State: "running"})
	}
	d.deliver()
	d.settle()
	if n := d.m.dirtyCount(); n != 200 {
		t.Fatalf("%d units marked changed, want 200", n)
	}
	d.advance(DefaultDebounce)
	// One list, and the preview of the selection (h000) refreshed.
	if calls := f.takeCalls(); count(calls, "list") != 1 || count(calls, "screen h000") != len(calls)-1 {
		t.Fatalf("calls = %v, want one list (and the selection's screen)", calls)
	}
	if !strings.Contains(d.screen(), "200 harnesses, 200 running") {
		t.Errorf("title: %s", strings.Split(d.screen(), "\n")[0])
	}
}

// TestEventStormIsRateLimited: a fleet that changes all the time (every
// unit, every 10 ms, for 10 s) costs at most four lists a second, and
// the screen still follows it.
func TestEventStormIsRateLimited(t *testing.T) {
	f := newFakeDaemon()
	for i := range 200 {
		f.addUnit(fmt.Sprintf("h%03d", i), "running")
	}
	d := newDriver(t, f, 100, 30, nil)
	d.key("x") // a stopped selection: no preview polls in the count
	f.takeCalls()
	for tick := range 1000 {
		for i := range 200 {
			d.push(api.Event{Kind: api.EventState, Unit: fmt.Sprintf("h%03d", i)})
		}
		d.deliver()
		d.settle()
		if tick == 999 {
			f.setState("h007", "failed")
		}
		d.advance(10 * time.Millisecond)
	}
	d.advance(time.Second)
	calls := f.takeCalls()
	if n := count(calls, "list"); n > 41 || n < 30 {
		t.Fatalf("%d lists in 10 s of constant change, want about 4 a second (at most 41)", n)
	}
	if !strings.Contains(d.line("h007"), "failed") {
		t.Fatalf("the last change is not on screen:\n%s", d.screen())
	}
}

// TestReloadRelistsAndDropsRemovedUnits: a reload event re-lists (units
// and upstreams); a unit the daemon forgot leaves the table, and the
// cursor moves to a neighbour.
func TestReloadRelistsAndDropsRemovedUnits(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	f.remove("alpha")
	f.addUnit("gamma", "running")
	f.takeCalls()
	d.event(api.Event{Kind: api.EventReload})
	d.advance(DefaultDebounce)
	calls := f.takeCalls()
	if !slices.Contains(calls, "list") || !slices.Contains(calls, "mcp_status") {
		t.Fatalf("calls after reload = %v", calls)
	}
	if strings.Contains(d.screen(), "alpha") || d.line("gamma") == "" {
		t.Fatalf("screen after reload:\n%s", d.screen())
	}
	if d.m.sel != "beta" {
		t.Errorf("selection after alpha went: %q, want beta", d.m.sel)
	}
}

// TestDescribeOfAGoneUnitRemovesIt: unknown_harness on describe means the
// unit is gone.
func TestDescribeOfAGoneUnitRemovesIt(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	f.remove("beta")
	d.event(api.Event{Kind: api.EventState, Unit: "beta", State: "stopped"})
	d.advance(DefaultDebounce)
	if d.line("beta") != "" {
		t.Fatalf("beta still shown:\n%s", d.screen())
	}
	if d.m.status != "" {
		t.Errorf("status %q: a unit that went away is no error", d.m.status)
	}
}

// TestDroppedEventsRelist: when the subscription lost events the model
// cannot know what changed, so the next flush re-lists.
func TestDroppedEventsRelist(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	f.takeCalls()
	f.mu.Lock()
	f.dropped = 3
	f.mu.Unlock()
	d.event(api.Event{Kind: api.EventState, Unit: "beta"})
	d.advance(DefaultDebounce)
	if calls := f.takeCalls(); !slices.Contains(calls, "list") {
		t.Fatalf("calls = %v, want a list", calls)
	}
}

// TestStaleAnswerIsDropped: an answer issued before the unit's current
// row never replaces it.
func TestStaleAnswerIsDropped(t *testing.T) {
	d := newDriver(t, smallFleet(), 100, 30, nil)
	old := d.m.unitSeq["alpha"] - 1
	d.send(unitMsg{seq: old, name: "alpha", unit: &unitRow{UnitInfo: api.UnitInfo{Name: "alpha", State: "failed"}}})
	d.send(listMsg{seq: old, units: []unitRow{{UnitInfo: api.UnitInfo{Name: "alpha", State: "failed"}}}})
	if l := d.line("alpha"); !strings.Contains(l, "running") {
		t.Fatalf("alpha row %q: a stale answer overwrote it", l)
	}
}

// TestActionKeysCallTheOps: x, s, r and t call stop, start, restart and
// trigger on the selection, as the CLI verbs would, and say what happened.
func TestActionKeysCallTheOps(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	for _, c := range []struct{ key, call, status string }{
		{"x", "stop alpha", "stop alpha: stopped"},
		{"x", "stop alpha", "stop alpha: already stopped"},
		{"s", "start alpha", "start alpha: running"},
		{"r", "restart alpha", "restart alpha: running"},
		{"t", "trigger alpha", "trigger alpha: run 7 started"},
	} {
		f.takeCalls()
		d.key(c.key)
		calls := f.takeCalls()
		if len(calls) == 0 || calls[0] != c.call {
			t.Errorf("key %s: calls %v, want %q first", c.key, calls, c.call)
		}
		if d.m.status != c.status || d.m.statusErr {
			t.Errorf("key %s: status %q (err %v), want %q", c.key, d.m.status, d.m.statusErr, c.status)
		}
	}
	// The action's own answer updates the row, with or without an event.
	if l := d.line("alpha"); !strings.Contains(l, "running") {
		t.Errorf("alpha row %q", l)
	}
}

// TestRefusalShowsCodeAndMessage: an operation the daemon refuses shows
// its code and message in the status line.
func TestRefusalShowsCodeAndMessage(t *testing.T) {
	f := smallFleet()
	f.refuse[api.OpTrigger] = &errcode.Remote{Code: errcode.NotAJob, Message: `harness "alpha" is not a job`}
	f.refuse[api.OpReload] = &errcode.Remote{Code: errcode.ConfigInvalid, Message: "harness.toml:3: harness.x: cmd is required"}
	d := newDriver(t, f, 100, 30, nil)
	d.key("t")
	want := `trigger alpha refused: not_a_job: harness "alpha" is not a job`
	if d.m.status != want || !d.m.statusErr || !strings.Contains(d.screen(), want) {
		t.Fatalf("status %q (err %v), want %q", d.m.status, d.m.statusErr, want)
	}
	d.key("R")
	if want := "reload refused: config_invalid: harness.toml:3: harness.x: cmd is required"; d.m.status != want {
		t.Fatalf("status %q, want %q", d.m.status, want)
	}
}

// TestFilterNarrowsTheTable: / filters as you type (name, project,
// state), Enter keeps the filter, Esc clears it.
func TestFilterNarrowsTheTable(t *testing.T) {
	d := newDriver(t, smallFleet(), 100, 30, nil)
	d.key("/", "web")
	if d.line("alpha") != "" || d.line("api") == "" || d.line("mcp.db") == "" || !strings.Contains(d.screen(), "/web") {
		t.Fatalf("filter web:\n%s", d.screen())
	}
	if d.m.sel != "web/api" {
		t.Errorf("selection %q, want the first match web/api", d.m.sel)
	}
	d.key("backspace", "backspace", "backspace")
	d.send(tea.PasteMsg{Content: "web\nignored"})
	d.key("enter")
	if d.m.edit != nil || d.m.filter != "web" {
		t.Fatalf("after Enter: edit %v filter %q", d.m.edit, d.m.filter)
	}
	d.key("esc")
	if d.m.filter != "" || d.line("alpha") == "" {
		t.Fatalf("Esc did not clear the filter:\n%s", d.screen())
	}
	d.key("/", "stopped")
	if d.line("alpha") != "" || d.line("beta") == "" || d.line("nightly") == "" {
		t.Fatalf("filter stopped:\n%s", d.screen())
	}
	d.key("backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "zzz")
	if !strings.Contains(d.screen(), `nothing matches "zzz"`) || d.m.sel != "" {
		t.Fatalf("filter zzz (sel %q):\n%s", d.m.sel, d.screen())
	}
	d.key("enter", "x")
	if !d.m.statusErr || !strings.Contains(d.m.status, "no harness selected") {
		t.Errorf("stop with nothing selected: status %q", d.m.status)
	}
}

// TestPreviewFollowsSelectionAndPollsOnlyLiveUnits: moving the cursor
// moves the preview (after the cursor rests); a running unit's new
// output comes in by cursor; a stopped selection arms no timer at all.
func TestPreviewFollowsSelectionAndPollsOnlyLiveUnits(t *testing.T) {
	f := smallFleet()
	f.units["web/nightly"].NextFire = nil // no job timer either
	f.log("beta", "beta's last words")
	d := newDriver(t, f, 100, 30, nil)
	d.advance(selectDelay)
	f.log("alpha", "second line")
	f.takeCalls()
	d.advance(DefaultPreviewEvery)
	if calls := f.takeCalls(); !slices.Equal(calls, []string{"screen alpha"}) {
		t.Fatalf("poll calls %v", calls)
	}
	if !strings.Contains(d.screen(), "second line") || strings.Count(d.screen(), "alpha says hello") != 1 {
		t.Fatalf("preview after poll:\n%s", d.screen())
	}
	d.key("down")
	d.advance(selectDelay)
	if !strings.Contains(d.screen(), "preview of beta (stopped)") || !strings.Contains(d.screen(), "beta's last words") {
		t.Fatalf("preview of beta:\n%s", d.screen())
	}
	d.advance(DefaultPreviewEvery) // alpha's last poll timer fires, and is dropped
	f.takeCalls()
	if p := d.pending(); len(p) != 0 {
		t.Fatalf("timers armed with a stopped unit selected and nothing changing: %v", p)
	}
	d.advance(time.Hour)
	if calls := f.takeCalls(); len(calls) != 0 {
		t.Fatalf("calls while idle: %v", calls)
	}
	// An event for the selection refreshes the row and the preview, with
	// the debounce.
	f.log("beta", "-- spawned")
	f.setState("beta", "running")
	d.event(api.Event{Kind: api.EventState, Unit: "beta", State: "running"})
	d.advance(DefaultDebounce)
	if !strings.Contains(d.screen(), "-- spawned") || !strings.Contains(d.screen(), "preview of beta (running)") {
		t.Fatalf("preview after event:\n%s", d.screen())
	}
}

// TestLogsAndRunsViews: l shows the selection's entries, h its runs
// (newest first), Esc goes back to the table.
func TestLogsAndRunsViews(t *testing.T) {
	f := smallFleet()
	for i := range 50 {
		f.log("alpha", fmt.Sprintf("line %02d", i))
	}
	code := 2
	end := time.Date(2026, 1, 2, 9, 0, 5, 0, time.Local)
	f.runs["alpha"] = []api.Run{
		{ID: 1, Harness: "alpha", Cause: api.CauseManual, PID: 11, StartedAt: end.Add(-time.Minute), EndedAt: &end, ExitCode: &code},
		{ID: 2, Harness: "alpha", Cause: api.CauseRestart, PID: 101, StartedAt: end},
	}
	d := newDriver(t, f, 100, 24, nil)
	d.key("l")
	scr := d.screen()
	if !strings.Contains(scr, "logs of alpha") || !strings.Contains(scr, "line 49") || !strings.Contains(scr, "line 30") || strings.Contains(scr, "line 29") {
		t.Fatalf("logs view (20 lines of body):\n%s", scr)
	}
	d.key("pgup") // 19 lines up
	if scr := d.screen(); !strings.Contains(scr, "line 11") || strings.Contains(scr, "line 10") || strings.Contains(scr, "line 31") {
		t.Fatalf("logs view a page up:\n%s", scr)
	}
	d.key("end", "h")
	scr = d.screen()
	r2, r1 := strings.Index(scr, "restart"), strings.Index(scr, "manual")
	if r2 < 0 || r1 < 0 || r2 > r1 || !strings.Contains(d.line("manual"), "09:00:05") || !strings.Contains(d.line("restart"), "running") {
		t.Fatalf("runs view:\n%s", scr)
	}
	d.key("esc")
	if d.m.mode != modeTable || !strings.Contains(d.screen(), "preview of alpha") {
		t.Fatalf("esc did not return to the table:\n%s", d.screen())
	}
}

// TestActivityColumnWhenTheDaemonSendsIt: with the terminals work's
// activity and idle_s, the column shows busy or idle and how long, and
// the idle time grows once a second without any fetch.
func TestActivityColumnWhenTheDaemonSendsIt(t *testing.T) {
	f := smallFleet()
	idle := 5.0
	f.units["alpha"].Activity, f.units["alpha"].IdleS = "idle", &idle
	f.units["web/api"].Activity = "busy"
	d := newDriver(t, f, 100, 30, nil)
	if !strings.Contains(d.line("alpha"), "idle 5s") || !strings.Contains(d.line("api"), "busy") {
		t.Fatalf("activity:\n%s", d.screen())
	}
	f.takeCalls()
	d.advance(2 * time.Second)
	if !strings.Contains(d.line("alpha"), "idle 7s") {
		t.Fatalf("idle time did not grow:\n%s", d.screen())
	}
	for _, c := range f.takeCalls() {
		if !strings.HasPrefix(c, "screen") { // the preview's poll of running alpha
			t.Errorf("clock tick fetched %q", c)
		}
	}
}

// TestActivityEventsFillTheColumnAndPaceThePreview: busy/idle events
// (api.EventActivity) show without a fetch; the selection's preview
// follows its output while busy and stops asking once it is idle; a
// fetched row that says nothing of activity keeps what the events said.
func TestActivityEventsFillTheColumnAndPaceThePreview(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	d.advance(selectDelay)
	f.takeCalls()
	d.event(api.Event{Kind: api.EventActivity, Unit: "alpha", Activity: api.ActivityBusy, Time: d.now})
	if !strings.Contains(d.line("alpha"), "busy") {
		t.Fatalf("alpha row after busy: %q", d.line("alpha"))
	}
	if calls := f.takeCalls(); !slices.Equal(calls, []string{"screen alpha"}) {
		t.Fatalf("calls on the selection turning busy: %v, want its preview only", calls)
	}
	d.advance(3 * DefaultPreviewEvery)
	if n := count(f.takeCalls(), "screen alpha"); n != 3 {
		t.Fatalf("%d preview polls in 3 s while busy, want 3", n)
	}
	d.event(api.Event{Kind: api.EventActivity, Unit: "alpha", Activity: api.ActivityIdle, Time: d.now.Add(-4 * time.Second)})
	if !strings.Contains(d.line("alpha"), "idle 4s") {
		t.Fatalf("alpha row after idle: %q", d.line("alpha"))
	}
	d.advance(time.Minute)
	if calls := f.takeCalls(); count(calls, "screen alpha") != 2 || len(calls) != 2 {
		t.Fatalf("calls after turning idle: %v, want the last output and one poll already on its way", calls)
	}
	if !strings.Contains(d.line("alpha"), "idle 1m") {
		t.Fatalf("idle time did not grow: %q", d.line("alpha"))
	}
	// A state event's describe has no activity: the row keeps the events'.
	d.event(api.Event{Kind: api.EventState, Unit: "alpha", State: "running"})
	d.advance(DefaultDebounce)
	if !strings.Contains(d.line("alpha"), "idle 1m") {
		t.Fatalf("a describe without activity wiped it: %q", d.line("alpha"))
	}
}

// TestNextFireRefetchesTheJob: when a job's next fire passes the model
// fetches that job (a skipped firing sends no event).
func TestNextFireRefetchesTheJob(t *testing.T) {
	f := smallFleet()
	d := newDriver(t, f, 100, 30, nil)
	d.key("/", "stopped", "enter", "down") // select web/nightly: nothing polls
	d.advance(time.Second)
	f.takeCalls()
	next := d.now.Add(time.Hour)
	f.units["web/nightly"].NextFire = &next
	d.advance(30 * time.Minute)
	if calls := f.takeCalls(); !slices.Equal(calls, []string{"describe web/nightly"}) {
		t.Fatalf("calls at the next fire: %v", calls)
	}
	if !strings.Contains(d.line("nightly"), "11:00:01") {
		t.Fatalf("nightly row %q", d.line("nightly"))
	}
}

// TestUpstreamToolsFollowUpIsBounded: a running upstream without tools
// yet is re-fetched a few times, with growing gaps, then left alone.
func TestUpstreamToolsFollowUpIsBounded(t *testing.T) {
	f := smallFleet()
	f.ups[0].Tools = 0
	d := newDriver(t, f, 100, 30, nil)
	d.key("x") // stop alpha: a stopped selection polls nothing
	d.event(api.Event{Kind: api.EventState, Unit: "mcp.gitea", State: "running"})
	f.takeCalls()
	d.advance(time.Minute)
	calls := f.takeCalls()
	if n := count(calls, "mcp_status"); n != upstreamFollowUps+1 {
		t.Fatalf("calls %v, want the flush's mcp_status and %d follow-ups", calls, upstreamFollowUps)
	}
}

// TestDaemonLossEndsTheDashboard: the subscription ending quits with an
// error that names the socket and carries daemon_unavailable.
func TestDaemonLossEndsTheDashboard(t *testing.T) {
	d := newDriver(t, smallFleet(), 100, 30, nil)
	d.endSubscription()
	if !d.quit {
		t.Fatal("model did not quit when the subscription ended")
	}
	err := d.m.Err()
	if err == nil || !strings.Contains(err.Error(), "/run/test.sock") || errcode.Of(err) != errcode.DaemonUnavailable {
		t.Fatalf("Err() = %v", err)
	}
}

// TestQuitKeys: q and Ctrl-C quit without an error.
func TestQuitKeys(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		d := newDriver(t, smallFleet(), 100, 30, nil)
		d.key(k)
		if !d.quit || d.m.Err() != nil {
			t.Errorf("%s: quit %v err %v", k, d.quit, d.m.Err())
		}
	}
}

// TestSendSlotsIn: without a way to send the key is absent from the help
// line and does nothing; given one, i takes a line and sends it to the
// selection.
func TestSendSlotsIn(t *testing.T) {
	d := newDriver(t, smallFleet(), 120, 30, nil)
	if strings.Contains(d.m.helpLine(), "send") || strings.Contains(d.m.helpLine(), "attach") {
		t.Fatalf("help line offers what does not exist: %q", d.m.helpLine())
	}
	d.key("i")
	if d.m.edit != nil {
		t.Fatal("i opened an input line without a way to send")
	}
	type sent struct{ unit, line string }
	got := make(chan sent, 1)
	d = newDriver(t, smallFleet(), 120, 30, func(o *Options) {
		o.Send = func(_ context.Context, unit, line string) error { got <- sent{unit, line}; return nil }
	})
	if !strings.Contains(d.m.helpLine(), "i send") {
		t.Fatalf("help line %q lacks send", d.m.helpLine())
	}
	d.key("i", "yes please", "enter")
	if s := <-got; s != (sent{"alpha", "yes please"}) {
		t.Fatalf("sent %+v", s)
	}
	if d.m.status != "sent 11 bytes to alpha" {
		t.Errorf("status %q", d.m.status)
	}
}

// TestEveryFrameFitsTheTerminal: at any size, with 200 harnesses and long
// names and descriptions, the frame has exactly the terminal's height and
// no line is wider than it, in every view.
func TestEveryFrameFitsTheTerminal(t *testing.T) {
	f := newFakeDaemon()
	for i := range 200 {
		u := f.addUnit(fmt.Sprintf("p%d/harness-with-a-rather-long-name-%03d", i%3, i), []string{"running", "stopped", "restarting"}[i%3])
		u.Description = "a description\twith a tab and 漢字 that goes on and on past any terminal's width"
		f.log(u.Name, "output with \x1b[31mcolour\x1b[0m and 漢字 and a very long line "+strings.Repeat("x", 300))
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}, {40, 10}, {200, 60}, {20, 5}, {12, 3}, {1, 1}} {
		d := newDriver(t, f, size[0], size[1], nil)
		d.advance(selectDelay)
		for _, view := range []string{"table", "l", "h", "esc"} {
			if view != "table" {
				d.key(view)
			}
			lines := strings.Split(d.m.Render(), "\n")
			if len(lines) != size[1] {
				t.Errorf("%dx%d %s: %d lines", size[0], size[1], view, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%dx%d %s: line %d is %d wide: %q", size[0], size[1], view, i, w, ansi.Strip(l))
				}
			}
		}
	}
}

func count(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// dirtyCount is how many units wait for the debounced fetch (tests).
func (m *Model) dirtyCount() int { return len(m.dirty) }
