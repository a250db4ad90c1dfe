package top

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// fakeUnit is a unit as a daemon with terminals sends it: the list fields plus activity and idle_s.
type fakeUnit struct {
	api.UnitInfo
	Activity string   `json:"activity,omitempty"`
	IdleS    *float64 `json:"idle_s,omitempty"`
}

// fakeDaemon answers the dashboard's operations from memory, through JSON
// as the socket would, and records every call.
type fakeDaemon struct {
	mu      sync.Mutex
	units   map[string]*fakeUnit
	ups     []api.UpstreamStatus
	logs    map[string][]api.LogEntry
	runs    map[string][]api.Run
	refuse  map[string]error // op -> the error it answers with
	calls   []string         // "op name" of every call, in order
	dropped uint64
	nextID  uint64
}

func newFakeDaemon() *fakeDaemon {
	return &fakeDaemon{units: map[string]*fakeUnit{}, logs: map[string][]api.LogEntry{},
		runs: map[string][]api.Run{}, refuse: map[string]error{}}
}

func (f *fakeDaemon) addUnit(name, state string) *fakeUnit {
	f.mu.Lock()
	defer f.mu.Unlock()
	project, _ := splitProject(name)
	u := &fakeUnit{UnitInfo: api.UnitInfo{Name: name, State: state, Project: project}}
	f.units[name] = u
	return u
}

func (f *fakeDaemon) setState(name, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.units[name].State = state
}

func (f *fakeDaemon) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.units, name)
}

// log appends an output entry to a unit's activity log.
func (f *fakeDaemon) log(name, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.logs[name] = append(f.logs[name], api.LogEntry{ID: f.nextID, Time: time.Unix(0, 0), Kind: api.EntryOutput, Text: text})
}

// takeCalls returns the calls so far and forgets them.
func (f *fakeDaemon) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeDaemon) DroppedEvents() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

func (f *fakeDaemon) Call(_ context.Context, op string, args, result any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	var a struct {
		Name   string   `json:"name"`
		Names  []string `json:"names"`
		Cursor *uint64  `json:"cursor"`
		Lines  int      `json:"lines"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	if a.Name == "" && len(a.Names) == 1 {
		a.Name = a.Names[0]
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.TrimSpace(op+" "+a.Name))
	if err := f.refuse[op]; err != nil {
		return err
	}
	answer, err := f.answerLocked(op, a.Name, a.Cursor, a.Lines)
	if err != nil {
		return err
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, result)
}

func (f *fakeDaemon) answerLocked(op, name string, cursor *uint64, lines int) (any, error) {
	unknown := &errcode.Remote{Code: errcode.UnknownHarness, Message: fmt.Sprintf("no harness named %q", name)}
	switch op {
	case api.OpList:
		out := []*fakeUnit{}
		for _, u := range f.units {
			out = append(out, u)
		}
		slices.SortFunc(out, func(a, b *fakeUnit) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	case api.OpDescribe:
		if u, ok := f.units[name]; ok {
			return u, nil
		}
		return nil, unknown
	case api.OpMCPStatus:
		return append([]api.UpstreamStatus{}, f.ups...), nil
	case api.OpScreen:
		// The screen of a running unit shows its output lines; anything
		// else has no terminal to show.
		u, ok := f.units[name]
		switch {
		case !ok && strings.HasPrefix(name, "mcp."):
			return nil, &errcode.Remote{Code: errcode.InvalidArgument, Message: name + " is an upstream: it has no terminal"}
		case !ok:
			return nil, unknown
		case u.State != "running":
			return nil, &errcode.Remote{Code: errcode.NotRunning, Message: name + " is not running"}
		}
		s := api.Screen{Name: name, Cols: 120, Rows: 40}
		for _, e := range f.logs[name] {
			if e.Kind == api.EntryOutput {
				s.Lines = append(s.Lines, e.Text)
			}
		}
		return s, nil
	case api.OpLogs:
		es := f.logs[name]
		if cursor != nil {
			i := slices.IndexFunc(es, func(e api.LogEntry) bool { return e.ID > *cursor })
			if i < 0 {
				i = len(es)
			}
			es = es[i:]
		} else if lines > 0 && len(es) > lines {
			es = es[len(es)-lines:]
		}
		return api.LogsSummary{Format: "summary", Entries: append([]api.LogEntry{}, es...)}, nil
	case api.OpRuns:
		return append([]api.Run{}, f.runs[name]...), nil
	case api.OpStart, api.OpStop, api.OpRestart:
		u, ok := f.units[name]
		if !ok {
			return nil, unknown
		}
		want := map[string]string{api.OpStart: "running", api.OpStop: "stopped", api.OpRestart: "running"}[op]
		changed := u.State != want || op == api.OpRestart
		u.State = want
		return api.ActionResult{Results: []api.ActionItem{{Name: name, State: want, Changed: changed}}}, nil
	case api.OpTrigger:
		return api.TriggerResult{Name: name, RunID: 7}, nil
	case api.OpReload:
		return api.ReloadResult{Changed: []string{"x"}}, nil
	}
	return nil, fmt.Errorf("fake daemon: no op %q", op)
}

// timerSet is what a driven model's After hands back instead of sleeping.
type timerSet struct {
	at  time.Time
	msg tea.Msg
}

// wantEvent is what a driven model's event wait hands back: the driver
// delivers the next event itself.
type wantEvent struct{}

// driver runs a Model as bubbletea does (commands' messages back into
// Update, batches split), but on one goroutine: commands run in order as
// they are issued, the event wait is a marker, and timers are kept on a
// fake clock that moves only when the test advances it.
type driver struct {
	t       testing.TB
	m       *Model
	f       *fakeDaemon
	queue   []tea.Msg
	events  []api.Event // pushed while the model was not waiting
	waiting bool        // the model waits for the next event
	closed  bool        // the subscription has ended
	now     time.Time
	timers  []timerSet
	quit    bool
}

func newDriver(t testing.TB, f *fakeDaemon, width, height int, tweak func(*Options)) *driver {
	d := &driver{t: t, f: f, now: time.Date(2026, 1, 2, 10, 0, 0, 0, time.Local)}
	o := Options{
		Backend: f, Socket: "/run/test.sock",
		Now: func() time.Time { return d.now },
		After: func(dur time.Duration, msg tea.Msg) tea.Cmd {
			at := d.now.Add(dur)
			return func() tea.Msg { return timerSet{at: at, msg: msg} }
		},
	}
	if tweak != nil {
		tweak(&o)
	}
	d.m = New(o)
	d.m.waitEvents = func(<-chan api.Event) tea.Cmd { return func() tea.Msg { return wantEvent{} } }
	d.run(d.m.Init())
	d.queue = append(d.queue, tea.WindowSizeMsg{Width: width, Height: height})
	d.settle()
	return d
}

func (d *driver) run(cmd tea.Cmd) {
	if cmd != nil {
		d.queue = append(d.queue, cmd())
	}
}

// settle handles messages until none is left.
func (d *driver) settle() {
	d.t.Helper()
	for n := 0; len(d.queue) > 0; n++ {
		if n > 100000 {
			d.t.Fatal("model does not settle: it keeps issuing commands")
		}
		msg := d.queue[0]
		d.queue = d.queue[1:]
		switch msg := msg.(type) {
		case nil:
		case tea.BatchMsg:
			for _, c := range msg {
				d.run(c)
			}
		case timerSet:
			d.timers = append(d.timers, msg)
		case tea.QuitMsg:
			d.quit = true
		case wantEvent:
			d.waiting = true
			d.deliver()
		default:
			_, cmd := d.m.Update(msg)
			d.run(cmd)
		}
	}
}

// deliver hands the model its next event, or the subscription's end.
func (d *driver) deliver() {
	switch {
	case !d.waiting:
	case len(d.events) > 0:
		d.waiting = false
		d.queue = append(d.queue, eventMsg{d.events[0]})
		d.events = d.events[1:]
	case d.closed:
		d.waiting = false
		d.queue = append(d.queue, eventsClosedMsg{})
	}
}

// send hands the model one message and settles.
func (d *driver) send(msg tea.Msg) {
	d.queue = append(d.queue, msg)
	d.settle()
}

// push queues events on the subscription without handling them yet.
func (d *driver) push(evs ...api.Event) { d.events = append(d.events, evs...) }

// event pushes an event into the subscription and settles.
func (d *driver) event(ev api.Event) {
	d.push(ev)
	d.deliver()
	d.settle()
}

// endSubscription ends the event stream, as a lost connection does.
func (d *driver) endSubscription() {
	d.closed = true
	d.deliver()
	d.settle()
}

// advance moves the clock on, firing the timers that fall due in order.
func (d *driver) advance(dur time.Duration) {
	end := d.now.Add(dur)
	for {
		slices.SortStableFunc(d.timers, func(a, b timerSet) int { return a.at.Compare(b.at) })
		if len(d.timers) == 0 || d.timers[0].at.After(end) {
			break
		}
		ts := d.timers[0]
		d.timers = d.timers[1:]
		d.now = ts.at
		d.send(ts.msg)
	}
	d.now = end
}

// key presses keys given as tea spells them ("x", "down", "esc",
// "ctrl+c", "enter") or as literal text (anything longer that is no
// named key is typed rune by rune).
func (d *driver) key(keys ...string) {
	for _, k := range keys {
		for _, msg := range keyMsgs(k) {
			d.send(msg)
		}
	}
}

func keyMsgs(k string) []tea.Msg {
	named := map[string]rune{"down": tea.KeyDown, "up": tea.KeyUp, "esc": tea.KeyEscape, "enter": tea.KeyEnter,
		"backspace": tea.KeyBackspace, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "home": tea.KeyHome, "end": tea.KeyEnd}
	if c, ok := named[k]; ok {
		return []tea.Msg{tea.KeyPressMsg{Code: c}}
	}
	if rest, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return []tea.Msg{tea.KeyPressMsg{Code: rune(rest[0]), Mod: tea.ModCtrl}}
	}
	var out []tea.Msg
	for _, r := range k {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}

// screen is the rendered screen without styles.
func (d *driver) screen() string { return ansi.Strip(d.m.Render()) }

// line is the first screen line that contains s, or "".
func (d *driver) line(s string) string {
	for _, l := range strings.Split(d.screen(), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// pending lists the timers waiting, by message type.
func (d *driver) pending() []string {
	var out []string
	for _, ts := range d.timers {
		out = append(out, fmt.Sprintf("%T", ts.msg))
	}
	return out
}
