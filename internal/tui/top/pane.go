package top

import (
	"cmp"
	"errors"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// paneKind names the text panes that follow the selection.
type paneKind int

const (
	panePreview paneKind = iota // under the table
	paneLogs                    // the logs view
	paneRuns                    // the runs view
)

const (
	// previewEntries is how many entries the preview asks for at first.
	previewEntries = 100
	// logsEntries is how many the logs view asks for at first.
	logsEntries = 500
	// selectDelay lets the cursor run over many rows (a held arrow key)
	// before the pane of where it stops is fetched.
	selectDelay = 60 * time.Millisecond
)

// pane is text about the selected unit that is kept current while shown.
// gen changes whenever the pane starts following another unit (or is
// shown again); answers and timers of an older gen are dropped.
type pane struct {
	kind   paneKind
	unit   string
	gen    uint64
	lines  []string
	lastID uint64 // newest activity entry held (logs panes)
	err    string
	loaded bool
	armed  bool // a pollMsg of gen is on its way
}

// runsPane is the runs view's data.
type runsPane struct {
	unit   string
	gen    uint64
	runs   []api.Run
	err    string
	loaded bool
	armed  bool
}

// fetchPreview reads what the preview shows of unit: its screen as the
// program draws it (the screen op), or, for a unit with no terminal to
// show (stopped: not_running; an upstream: invalid_argument), the newest
// of its activity entries (after the cursor after, when not zero).
func (m *Model) fetchPreview(gen uint64, unit string, after uint64) tea.Cmd {
	entries := m.fetchEntries(panePreview, gen, unit, after, previewEntries)
	return func() tea.Msg {
		var s api.Screen
		err := m.call(api.OpScreen, api.ScreenArgs{Name: unit}, &s)
		if errors.Is(err, errcode.ErrNotRunning) || errors.Is(err, errcode.ErrInvalidArgument) {
			return entries()
		}
		if err != nil {
			return paneMsg{which: panePreview, gen: gen, unit: unit, err: err}
		}
		lines := s.Lines
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // the program's blank rows below its output
		}
		return paneMsg{which: panePreview, gen: gen, unit: unit, lines: lines, replace: true}
	}
}

// shown is the pane the current mode displays.
func (m *Model) shown() paneKind {
	switch m.mode {
	case modeLogs:
		return paneLogs
	case modeRuns:
		return paneRuns
	}
	return panePreview
}

func (m *Model) textPane(k paneKind) *pane {
	if k == paneLogs {
		return &m.logs
	}
	return &m.preview
}

// follow points every pane at the selection, dropping what they held of
// another unit, and fetches the shown pane shortly (see selectDelay).
func (m *Model) follow() tea.Cmd {
	for _, p := range []*pane{&m.preview, &m.logs} {
		if p.unit != m.sel {
			*p = pane{kind: p.kind, unit: m.sel, gen: p.gen + 1}
		}
	}
	if m.runs.unit != m.sel {
		m.runs = runsPane{unit: m.sel, gen: m.runs.gen + 1}
	}
	return m.armPoll(m.shown(), selectDelay)
}

// refreshSelection fetches the shown pane now: an event said the
// selected unit changed.
func (m *Model) refreshSelection() tea.Cmd {
	if m.sel == "" {
		return nil
	}
	k := m.shown()
	if k == paneRuns {
		return m.fetchRuns(m.runs.gen, m.sel)
	}
	p := m.textPane(k)
	return m.fetchPane(p)
}

// fetchPane asks for the pane's text: all of it the first time, then
// what came after the newest entry it holds.
func (m *Model) fetchPane(p *pane) tea.Cmd {
	after := uint64(0)
	if p.loaded {
		after = p.lastID
	}
	if p.kind == panePreview {
		return m.fetchPreview(p.gen, p.unit, after)
	}
	return m.fetchEntries(paneLogs, p.gen, p.unit, after, logsEntries)
}

// armPoll sets the pane's one timer, unless it is set already.
func (m *Model) armPoll(k paneKind, d time.Duration) tea.Cmd {
	if m.sel == "" {
		return nil
	}
	var gen uint64
	var armed *bool
	if k == paneRuns {
		gen, armed = m.runs.gen, &m.runs.armed
	} else {
		p := m.textPane(k)
		gen, armed = p.gen, &p.armed
	}
	if *armed {
		return nil
	}
	*armed = true
	return m.o.After(d, pollMsg{which: k, gen: gen})
}

// onPoll fetches a pane whose timer fired, if it is still the one shown
// and still follows the same unit.
func (m *Model) onPoll(msg pollMsg) tea.Cmd {
	if msg.which == paneRuns {
		if msg.gen != m.runs.gen {
			return nil
		}
		m.runs.armed = false
		if m.shown() != paneRuns || m.sel == "" {
			return nil
		}
		return m.fetchRuns(m.runs.gen, m.sel)
	}
	p := m.textPane(msg.which)
	if msg.gen != p.gen {
		return nil
	}
	p.armed = false
	if m.shown() != msg.which || p.unit == "" {
		return nil
	}
	return m.fetchPane(p)
}

// onPane takes new text for a pane, and polls again while the unit runs:
// nothing announces new output.
func (m *Model) onPane(msg paneMsg) tea.Cmd {
	p := m.textPane(msg.which)
	if msg.gen != p.gen || msg.unit != p.unit {
		return nil
	}
	if msg.err != nil {
		if lostDaemon(msg.err) {
			return m.lose(msg.err)
		}
		p.err = errText(msg.err)
		return nil
	}
	p.err = ""
	if msg.replace {
		p.lines = msg.lines
	} else {
		p.lines = append(p.lines, msg.lines...)
	}
	if n := len(p.lines); n > maxPaneLines {
		p.lines = append([]string(nil), p.lines[n-maxPaneLines:]...)
	}
	p.lastID = max(p.lastID, msg.lastID)
	p.loaded = true
	if m.shown() == msg.which && m.live(p.unit) {
		return m.armPoll(msg.which, m.o.PreviewEvery)
	}
	return nil
}

func (m *Model) onRuns(msg runsMsg) tea.Cmd {
	if msg.gen != m.runs.gen || msg.unit != m.runs.unit {
		return nil
	}
	if msg.err != nil {
		if lostDaemon(msg.err) {
			return m.lose(msg.err)
		}
		m.runs.err = errText(msg.err)
		return nil
	}
	// Sorted once here, not at every frame of the runs view.
	slices.SortFunc(msg.runs, func(a, b api.Run) int { return cmp.Compare(b.ID, a.ID) }) // newest first
	m.runs.err, m.runs.runs, m.runs.loaded = "", msg.runs, true
	return nil
}

// live reports whether the unit may be producing output: a process of it
// is up or about to be, and it is not known to be idle (an activity event
// says when it turns busy again).
func (m *Model) live(name string) bool {
	var state string
	if u, ok := m.units[name]; ok {
		if u.Activity == api.ActivityIdle {
			return false
		}
		state = u.State
	} else if up, ok := m.ups[name]; ok {
		state = up.State
	}
	switch state {
	case "", "stopped", "failed":
		return false
	}
	return true
}

// setMode switches the body, fetching the newly shown pane at once.
func (m *Model) setMode(md mode) tea.Cmd {
	if m.mode == md {
		return nil
	}
	m.mode = md
	m.scroll = 0
	// A fresh gen: a timer of the pane's last showing must not double up
	// with the polling of this one.
	if k := m.shown(); k == paneRuns {
		m.runs.gen++
		m.runs.armed = false
	} else {
		p := m.textPane(k)
		p.gen++
		p.armed = false
	}
	return m.refreshSelection()
}
