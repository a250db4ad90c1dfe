package top

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Defaults of Options.
const (
	// DefaultDebounce gathers a burst of events (start --all is hundreds)
	// into one round of fetches; with a round trip it stays far inside
	// the half second a state change may take to show.
	DefaultDebounce = 40 * time.Millisecond
	// DefaultPreviewEvery is how often the pane of a live selection looks
	// for new output: no event says that output arrived.
	DefaultPreviewEvery = time.Second
	// DefaultFPS caps how often bubbletea draws. Its renderer wakes at this
	// rate whether or not anything changed, and those wake-ups are nearly
	// all of the dashboard's idle CPU (60, bubbletea's default, costs
	// about 0.7% of a core on the bench machine; see docs/benchmarks.md);
	// 20 still draws a key press within 50 ms.
	DefaultFPS = 20
	// DefaultCallTimeout bounds every call, so a wedged daemon shows as an
	// error instead of a frozen pane.
	DefaultCallTimeout = 10 * time.Second

	// manyDirty is the number of changed units past which one `list` is
	// cheaper than a `describe` each.
	manyDirty = 16
	// flushGap and listGap space the fetches of a fleet that never stops
	// changing (hundreds of agents turning busy and idle): at most ten
	// rounds a second, four when each is a whole list. A lone change
	// still shows after the debounce.
	flushGap = 100 * time.Millisecond
	listGap  = 250 * time.Millisecond
	// maxPaneLines bounds what a pane keeps of a unit's output.
	maxPaneLines = 1000
	// maxRuns is how many runs the runs view asks for.
	maxRuns = 200
	// upstreamFollowUps bounds the extra mcp_status fetches made while a
	// running upstream still reports no tools: its tool list arrives after
	// its state, and no event says when.
	upstreamFollowUps = 5
)

// Options configure a Model.
type Options struct {
	// Backend answers the operations; Events is its subscription, taken
	// before New so that no change between it and the first list is lost.
	Backend Backend
	Events  <-chan api.Event
	// Socket names the daemon in the message when it goes away.
	Socket string
	// Attach, when set, hands the terminal to an attachment to the named
	// unit (the attach key runs it with tea.Exec and the dashboard comes
	// back when it returns; ExecAttach runs `harness attach`). Nil hides
	// the key.
	Attach func(unit string) tea.ExecCommand
	// Send, when set, types a line (with Enter) into the named unit
	// (SendLine: the send op). Nil hides the key.
	Send func(ctx context.Context, unit, line string) error

	FPS          int           // default DefaultFPS (Run only)
	Debounce     time.Duration // default DefaultDebounce
	PreviewEvery time.Duration // default DefaultPreviewEvery
	CallTimeout  time.Duration // default DefaultCallTimeout
	// Now is the clock (default time.Now); After delivers msg after d
	// (default tea.Tick). Tests replace both and fire timers themselves.
	Now   func() time.Time
	After func(d time.Duration, msg tea.Msg) tea.Cmd
}

// mode is what the body of the screen shows.
type mode int

const (
	modeTable mode = iota // the fleet, with a preview of the selection
	modeLogs              // the selection's activity entries, full height
	modeRuns              // the selection's runs
)

// Model is the dashboard. Its methods run on bubbletea's event loop only;
// the commands it returns run elsewhere and touch nothing but the Backend
// and values captured when they were made.
type Model struct {
	o Options

	width, height int
	units         map[string]*unitRow
	ups           map[string]*api.UpstreamStatus
	seq           uint64            // issue number of the last fetch
	unitSeq       map[string]uint64 // issue number of each unit's current row
	upsSeq        uint64
	listed        bool // the first list has arrived

	rows      []row
	rowsStale bool
	sel       string // selected unit (the name survives re-ordering)
	selIdx    int
	top       int // first table row on screen

	mode   mode
	scroll int // logs view: lines up from the newest; runs view: rows down from the newest
	filter string
	edit   *lineEdit // non-nil while a line is being typed

	status    string
	statusErr bool

	// Changes seen on the subscription and not fetched yet.
	dirty      map[string]bool
	dirtySel   bool // the selection changed: refresh the shown pane too
	dirtyAll   bool
	dirtyUps   bool
	flushArmed bool
	lastFlush  time.Time // when the last round of fetches went out
	lastList   bool      // and whether it was a whole list
	dropped    uint64
	upFollow   int // follow-up mcp_status fetches left
	upDelay    time.Duration

	preview, logs pane
	runs          runsPane
	fireArmed     time.Time // when the next-fire timer is set for; zero if none
	clockArmed    bool

	lost     error // why the dashboard ended when the daemon went away
	quitting bool

	// waitEvents makes the command that delivers the next event
	// (waitEvent; the tests deliver events themselves).
	waitEvents func(<-chan api.Event) tea.Cmd
}

// New returns the dashboard's model; Init starts it.
func New(o Options) *Model {
	if o.FPS <= 0 {
		o.FPS = DefaultFPS
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.PreviewEvery <= 0 {
		o.PreviewEvery = DefaultPreviewEvery
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		}
	}
	return &Model{
		o:       o,
		units:   map[string]*unitRow{},
		ups:     map[string]*api.UpstreamStatus{},
		unitSeq: map[string]uint64{},
		dirty:   map[string]bool{},
		width:   80, height: 24,
		preview: pane{kind: panePreview},
		logs:    pane{kind: paneLogs},
		status:  "loading…",

		waitEvents: waitEvent,
	}
}

// Err is why the dashboard ended on its own: the daemon went away. Nil
// after the user quit.
func (m *Model) Err() error { return m.lost }

// Init subscribes to the event stream and fetches the fleet.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.waitEvents(m.o.Events), m.fetchList(), m.fetchUpstreams())
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if m.quitting {
		return m, nil
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.keepSelectionVisible()
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case tea.PasteMsg:
		return m, m.onPaste(msg.Content)
	case eventMsg:
		return m, tea.Batch(m.waitEvents(m.o.Events), m.onEvent(msg.ev))
	case eventsClosedMsg:
		return m, m.lose(errcode.ErrDaemonUnavailable)
	case flushMsg:
		m.flushArmed = false
		return m, m.flush()
	case upstreamRetryMsg:
		return m, m.fetchUpstreams()
	case listMsg:
		return m, m.onList(msg)
	case unitMsg:
		return m, m.onUnit(msg)
	case upstreamsMsg:
		return m, m.onUpstreams(msg)
	case paneMsg:
		return m, m.onPane(msg)
	case runsMsg:
		return m, m.onRuns(msg)
	case pollMsg:
		return m, m.onPoll(msg)
	case fireMsg:
		return m, m.onFire(msg)
	case clockMsg:
		m.clockArmed = false
		return m, m.armClock()
	case doneMsg:
		return m, m.onDone(msg)
	}
	return m, nil
}

// lose ends the dashboard because the daemon went away.
func (m *Model) lose(err error) tea.Cmd {
	m.quitting = true
	m.lost = fmt.Errorf("lost the connection to the daemon at %s (it stopped or went away): %w", m.o.Socket, err)
	return tea.Quit
}

// failed handles an error of a background fetch: the daemon's loss ends
// the dashboard, anything else goes to the status line.
func (m *Model) failed(what string, err error) tea.Cmd {
	if lostDaemon(err) {
		return m.lose(err)
	}
	m.setStatus(true, "%s: %s", what, errText(err))
	return nil
}

func (m *Model) setStatus(isErr bool, format string, args ...any) {
	m.status, m.statusErr = fmt.Sprintf(format, args...), isErr
}

// onEvent notes what an event changed and arms the debounced fetch.
func (m *Model) onEvent(ev api.Event) tea.Cmd {
	switch {
	case ev.Kind == api.EventReload:
		m.dirtyAll, m.dirtyUps = true, true
	case ev.Unit == "":
		return nil
	case ev.Kind == api.EventActivity:
		// The event carries all there is to know: no fetch.
		return m.onActivity(ev)
	case ev.Kind == api.EventAgent:
		if u, ok := m.units[ev.Unit]; ok && ev.Agent != nil {
			u.AgentView = *ev.Agent // all there is to know, as for activity
			if m.filter != "" {
				m.rowsStale = true
			}
			if ev.Unit == m.sel {
				m.dirtySel = true
			}
		}
		return nil
	case isUpstreamUnit(ev.Unit):
		m.dirtyUps = true
		m.upFollow, m.upDelay = upstreamFollowUps, 200*time.Millisecond
	default:
		// Any other kind that names a harness (state, exit, flapping, ...).
		m.dirty[ev.Unit] = true
		if u, ok := m.units[ev.Unit]; ok && ev.Kind == api.EventExit {
			u.Activity, u.IdleS = "", nil // the run that was busy or idle is over
			u.AgentView = api.AgentView{Agent: u.Agent}
		}
	}
	if ev.Unit != "" && ev.Unit == m.sel {
		m.dirtySel = true
	}
	if m.flushArmed {
		return nil
	}
	m.flushArmed = true
	gap := flushGap
	if m.lastList {
		gap = listGap
	}
	return m.o.After(max(m.o.Debounce, m.lastFlush.Add(gap).Sub(m.o.Now())), flushMsg{})
}

// onActivity shows a harness turning busy or idle (since ev.Time). The
// selection's preview follows its output while it is busy, and takes what
// it printed last when it turns idle.
func (m *Model) onActivity(ev api.Event) tea.Cmd {
	u, ok := m.units[ev.Unit]
	if !ok {
		return nil
	}
	now := m.o.Now()
	u.Activity, u.IdleS, u.fetched = ev.Activity, nil, now
	if ev.Activity == api.ActivityIdle && !ev.Time.IsZero() {
		idle := max(now.Sub(ev.Time).Seconds(), 0)
		u.IdleS = &idle
	}
	if m.filter != "" {
		m.rowsStale = true // activity is matched by the filter
	}
	cmds := []tea.Cmd{m.reselect(), m.armClock()}
	if ev.Unit == m.sel {
		cmds = append(cmds, m.refreshSelection())
	}
	return tea.Batch(cmds...)
}

// keepActivity carries what activity events said of a unit over to a
// fetched row of it that says nothing (a daemon whose list has no
// activity yet), while the unit runs. (The busy event of a new run may
// come before the row shows it running; an exit clears the activity, so
// none is carried from one run to the next.)
func keepActivity(old, fresh *unitRow) {
	if old != nil && old.Activity != "" && fresh.Activity == "" && fresh.IdleS == nil && fresh.State == "running" {
		fresh.Activity, fresh.IdleS, fresh.fetched = old.Activity, old.IdleS, old.fetched
	}
}

// flush fetches what the events since the last flush changed: each
// changed unit, or the whole list when many did, when the configuration
// was reloaded, or when the subscription dropped events.
func (m *Model) flush() tea.Cmd {
	if d := m.o.Backend.DroppedEvents(); d != m.dropped {
		m.dropped = d
		m.dirtyAll, m.dirtyUps = true, true
	}
	var cmds []tea.Cmd
	m.lastFlush = m.o.Now()
	m.lastList = m.dirtyAll || len(m.dirty) > manyDirty
	if m.lastList {
		cmds = append(cmds, m.fetchList())
	} else {
		for name := range m.dirty {
			cmds = append(cmds, m.fetchUnit(name))
		}
	}
	if m.dirtyUps {
		cmds = append(cmds, m.fetchUpstreams())
	}
	if m.dirtySel {
		cmds = append(cmds, m.refreshSelection())
	}
	clear(m.dirty)
	m.dirtyAll, m.dirtyUps, m.dirtySel = false, false, false
	return tea.Batch(cmds...)
}

func (m *Model) onList(msg listMsg) tea.Cmd {
	if msg.err != nil {
		return m.failed("list", msg.err)
	}
	seen := make(map[string]bool, len(msg.units))
	for i := range msg.units {
		u := &msg.units[i]
		seen[u.Name] = true
		if msg.seq > m.unitSeq[u.Name] {
			keepActivity(m.units[u.Name], u)
			m.units[u.Name], m.unitSeq[u.Name] = u, msg.seq
		}
	}
	for name := range m.units {
		if !seen[name] && msg.seq > m.unitSeq[name] {
			delete(m.units, name)
			m.unitSeq[name] = msg.seq // a late describe must not bring it back
		}
	}
	m.rowsStale = true
	sel := m.reselect()
	if !m.listed {
		// The first list puts the cursor on the first row, wherever an
		// earlier upstream answer put it.
		m.listed, m.status = true, ""
		if i, ok := m.nearestSelectable(0); ok && len(m.rows) > 0 {
			sel = tea.Batch(sel, m.selectRow(i))
		}
	}
	return tea.Batch(sel, m.armFire(), m.armClock())
}

func (m *Model) onUnit(msg unitMsg) tea.Cmd {
	if msg.err != nil {
		return m.failed("describe "+msg.name, msg.err)
	}
	if msg.seq <= m.unitSeq[msg.name] {
		return nil
	}
	m.unitSeq[msg.name] = msg.seq
	old, had := m.units[msg.name]
	if msg.unit != nil {
		keepActivity(old, msg.unit)
	}
	switch {
	case msg.unit == nil:
		delete(m.units, msg.name)
		m.rowsStale = true
	case had && old.Project == msg.unit.Project && m.filter == "":
		// The row keeps its place: update it where the rows point, and
		// spare re-grouping the fleet for one changed unit.
		*old = *msg.unit
	default:
		m.units[msg.name] = msg.unit
		m.rowsStale = true
	}
	return tea.Batch(m.reselect(), m.armFire(), m.armClock())
}

func (m *Model) onUpstreams(msg upstreamsMsg) tea.Cmd {
	if msg.err != nil {
		return m.failed("mcp_status", msg.err)
	}
	if msg.seq <= m.upsSeq {
		return nil
	}
	m.upsSeq = msg.seq
	clear(m.ups)
	waiting := false
	for i := range msg.ups {
		up := &msg.ups[i]
		m.ups[upstreamUnit(up.Project, up.Key)] = up
		waiting = waiting || (up.State == "running" && up.Tools == 0)
	}
	m.rowsStale = true
	cmd := m.reselect()
	if waiting && m.upFollow > 0 {
		m.upFollow--
		d := m.upDelay
		m.upDelay *= 2
		cmd = tea.Batch(cmd, m.o.After(d, upstreamRetryMsg{}))
	}
	return cmd
}

// onDone reports an operation the user asked for, and fetches the unit it
// touched: an idempotent no-op sends no event.
func (m *Model) onDone(msg doneMsg) tea.Cmd {
	if msg.err != nil {
		if lostDaemon(msg.err) {
			return m.lose(msg.err)
		}
		what := msg.op
		if msg.unit != "" {
			what += " " + msg.unit
		}
		m.setStatus(true, "%s refused: %s", what, errText(msg.err))
	} else {
		m.setStatus(false, "%s", msg.text)
	}
	switch {
	case msg.unit == "":
		return nil
	case isUpstreamUnit(msg.unit):
		return m.fetchUpstreams()
	default:
		return m.fetchUnit(msg.unit)
	}
}

// armFire sets one timer for the earliest next fire of a job, so the
// row's next-fire time moves on even when the firing was skipped (no
// event says so).
func (m *Model) armFire() tea.Cmd {
	var next time.Time
	now := m.o.Now()
	for _, u := range m.units {
		if u.NextFire != nil && u.NextFire.After(now) && (next.IsZero() || u.NextFire.Before(next)) {
			next = *u.NextFire
		}
	}
	if next.IsZero() || (!m.fireArmed.IsZero() && !next.Before(m.fireArmed)) {
		return nil
	}
	m.fireArmed = next
	return m.o.After(next.Sub(now)+200*time.Millisecond, fireMsg{at: next})
}

func (m *Model) onFire(msg fireMsg) tea.Cmd {
	if msg.at.Equal(m.fireArmed) {
		m.fireArmed = time.Time{}
	}
	now := m.o.Now()
	var cmds []tea.Cmd
	for name, u := range m.units {
		if u.NextFire != nil && !u.NextFire.After(now) {
			cmds = append(cmds, m.fetchUnit(name))
		}
	}
	return tea.Batch(append(cmds, m.armFire())...)
}

// armClock redraws once a second while some row shows an idle time,
// which grows without any event.
func (m *Model) armClock() tea.Cmd {
	if m.clockArmed {
		return nil
	}
	now := m.o.Now()
	for _, u := range m.units {
		if _, ok := u.idleFor(now); ok {
			m.clockArmed = true
			return m.o.After(time.Second, clockMsg{})
		}
	}
	return nil
}
