package top

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/harness-dev/harness/internal/api"
)

// binding is one key of the dashboard. The help line is built from the
// same table, so a key shows exactly when it works.
type binding struct {
	keys  []string // as tea.KeyPressMsg.String() spells them
	label string   // the key in the help line; "" keeps it out of the line
	help  string
	prio  int    // when the help line is too long the lowest prio goes first
	modes []mode // nil: every mode
	// when, if set, says whether the key works now (attach and send only
	// once the dashboard was given a way to do them).
	when func(m *Model) bool
	do   func(m *Model) tea.Cmd
}

func (b *binding) active(m *Model) bool {
	return (b.modes == nil || slices.Contains(b.modes, m.mode)) && (b.when == nil || b.when(m))
}

var (
	allViews  = []mode{modeTable, modeLogs, modeRuns}
	tableOnly = []mode{modeTable}
	subViews  = []mode{modeLogs, modeRuns}
)

// bindings are in the order of the help line.
var bindings = []binding{
	{keys: []string{"s"}, label: "s", help: "start", prio: 90, do: func(m *Model) tea.Cmd { return m.act(api.OpStart) }},
	{keys: []string{"x"}, label: "x", help: "stop", prio: 90, do: func(m *Model) tea.Cmd { return m.act(api.OpStop) }},
	{keys: []string{"r"}, label: "r", help: "restart", prio: 90, do: func(m *Model) tea.Cmd { return m.act(api.OpRestart) }},
	{keys: []string{"t"}, label: "t", help: "trigger", prio: 60, do: func(m *Model) tea.Cmd { return m.act(api.OpTrigger) }},
	{keys: []string{"a"}, label: "a", help: "attach", prio: 85, when: func(m *Model) bool { return m.o.Attach != nil }, do: (*Model).attach},
	{keys: []string{"i"}, label: "i", help: "send", prio: 80, when: func(m *Model) bool { return m.o.Send != nil }, do: (*Model).startSend},
	{keys: []string{"l", "enter"}, label: "l", help: "logs", prio: 70, modes: []mode{modeTable, modeRuns},
		do: func(m *Model) tea.Cmd { return m.setMode(modeLogs) }},
	{keys: []string{"h"}, label: "h", help: "runs", prio: 50, modes: []mode{modeTable, modeLogs},
		do: func(m *Model) tea.Cmd { return m.setMode(modeRuns) }},
	{keys: []string{"esc"}, label: "esc", help: "back", prio: 95, modes: subViews,
		do: func(m *Model) tea.Cmd { return m.setMode(modeTable) }},
	{keys: []string{"/"}, label: "/", help: "filter", prio: 65, modes: tableOnly, do: (*Model).startFilter},
	{keys: []string{"esc"}, modes: tableOnly, do: func(m *Model) tea.Cmd { return m.setFilter("") }},
	{keys: []string{"R"}, label: "R", help: "reload", prio: 55, do: func(m *Model) tea.Cmd {
		m.setStatus(false, "reloading the configuration…")
		return m.doReload()
	}},
	{keys: []string{"q", "ctrl+c"}, label: "q", help: "quit", prio: 100, do: func(m *Model) tea.Cmd {
		m.quitting = true
		return tea.Quit
	}},
	{keys: []string{"up", "k"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(-1) }},
	{keys: []string{"down", "j"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(1) }},
	{keys: []string{"pgup", "ctrl+b"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(-m.pageSize()) }},
	{keys: []string{"pgdown", "ctrl+f", "space"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(m.pageSize()) }},
	{keys: []string{"home", "g"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(-1 << 30) }},
	{keys: []string{"end", "G"}, modes: allViews, do: func(m *Model) tea.Cmd { return m.move(1 << 30) }},
}

// onKey runs the binding of a key; a key bound to nothing does nothing.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	if m.edit != nil {
		return m.onEditKey(k)
	}
	key := k.String()
	for i := range bindings {
		b := &bindings[i]
		if slices.Contains(b.keys, key) && b.active(m) {
			return b.do(m)
		}
	}
	return nil
}

// act runs an operation on the selected unit.
func (m *Model) act(op string) tea.Cmd {
	if m.sel == "" {
		m.setStatus(true, "%s: no harness selected", op)
		return nil
	}
	m.setStatus(false, "%s %s…", op, m.sel)
	if op == api.OpTrigger {
		return m.doTrigger(m.sel)
	}
	return m.doAction(op, m.sel)
}

// attach hands the terminal to an attachment to the selection; bubbletea
// gives it back, and redraws, when the attachment ends.
func (m *Model) attach() tea.Cmd {
	if m.sel == "" {
		m.setStatus(true, "attach: no harness selected")
		return nil
	}
	unit := m.sel
	return tea.Exec(m.o.Attach(unit), func(err error) tea.Msg {
		return doneMsg{op: "attach", unit: unit, text: "detached from " + unit, err: err}
	})
}

// move moves the cursor in the table, or scrolls the logs and runs views
// (by delta lines; positive is down, towards the newest).
func (m *Model) move(delta int) tea.Cmd {
	switch m.mode {
	case modeLogs:
		m.scroll = max(0, m.scroll-delta) // lines up from the newest
		return nil
	case modeRuns:
		m.scroll = max(0, m.scroll+delta) // rows down from the newest
		return nil
	}
	m.refreshRows()
	if len(m.rows) == 0 {
		return nil
	}
	i := min(max(m.selIdx+delta, 0), len(m.rows)-1)
	// Step over headings in the direction of travel, else back.
	step := 1
	if delta < 0 {
		step = -1
	}
	for j := i; j >= 0 && j < len(m.rows); j += step {
		if m.rows[j].selectable() {
			return m.selectRow(j)
		}
	}
	for j := i; j >= 0 && j < len(m.rows); j -= step {
		if m.rows[j].selectable() {
			return m.selectRow(j)
		}
	}
	return nil
}

// lineEdit is a line being typed: a filter, or input for a unit.
type lineEdit struct {
	send bool   // input for unit, else the filter
	unit string // the unit input goes to
	text []rune
}

func (m *Model) startFilter() tea.Cmd {
	m.edit = &lineEdit{text: []rune(m.filter)}
	return nil
}

func (m *Model) startSend() tea.Cmd {
	if m.sel == "" {
		m.setStatus(true, "send: no harness selected")
		return nil
	}
	m.edit = &lineEdit{send: true, unit: m.sel}
	return nil
}

// onEditKey edits the line: Enter takes it, Esc drops it, and a filter
// applies as it is typed.
func (m *Model) onEditKey(k tea.KeyPressMsg) tea.Cmd {
	e := m.edit
	switch k.String() {
	case "ctrl+c":
		m.quitting = true
		return tea.Quit
	case "esc":
		m.edit = nil
		if !e.send {
			return m.setFilter("")
		}
		return nil
	case "enter":
		m.edit = nil
		if e.send {
			m.setStatus(false, "sending to %s…", e.unit)
			return m.doSend(e.unit, string(e.text))
		}
		return nil
	case "backspace":
		if len(e.text) > 0 {
			e.text = e.text[:len(e.text)-1]
		}
	case "ctrl+u":
		e.text = nil
	default:
		if k.Text == "" {
			return nil
		}
		e.text = append(e.text, []rune(k.Text)...)
	}
	if !e.send {
		return m.setFilter(string(e.text))
	}
	return nil
}

// onPaste types pasted text into the line being edited (its first line:
// the line ends at Enter); outside a line, a paste does nothing.
func (m *Model) onPaste(text string) tea.Cmd {
	if m.edit == nil {
		return nil
	}
	text, _, _ = strings.Cut(text, "\n")
	m.edit.text = append(m.edit.text, []rune(strings.TrimRight(text, "\r"))...)
	if !m.edit.send {
		return m.setFilter(string(m.edit.text))
	}
	return nil
}

// setFilter shows only the rows that match f.
func (m *Model) setFilter(f string) tea.Cmd {
	if f == m.filter {
		return nil
	}
	m.filter = f
	m.rowsStale = true
	m.selIdx = 0 // a selection the filter hides gives way to the first match
	return m.reselect()
}
