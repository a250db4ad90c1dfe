package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/harness-dev/harness/internal/api"
)

// Styles. Colour is a hint only: every state is also spelled out.
var (
	styleBold     = ansi.Style{}.Bold()
	styleFaint    = ansi.Style{}.Faint()
	styleSelected = ansi.Style{}.Reverse(true)
	styleErr      = ansi.Style{}.ForegroundColor(ansi.Red)
	// agentStyles: an agent that needs a person stands out.
	agentStyles = map[api.AgentState]ansi.Style{
		api.AgentWaiting: ansi.Style{}.ForegroundColor(ansi.Black).BackgroundColor(ansi.Yellow).Bold(),
		api.AgentLimited: ansi.Style{}.ForegroundColor(ansi.Magenta).Bold(),
		api.AgentError:   ansi.Style{}.ForegroundColor(ansi.Red).Bold(),
	}
	stateStyles = map[string]ansi.Style{
		"running":    ansi.Style{}.ForegroundColor(ansi.Green),
		"starting":   ansi.Style{}.ForegroundColor(ansi.Yellow),
		"restarting": ansi.Style{}.ForegroundColor(ansi.Yellow),
		"stopping":   ansi.Style{}.ForegroundColor(ansi.Yellow),
		"degraded":   ansi.Style{}.ForegroundColor(ansi.Red),
		"failed":     ansi.Style{}.ForegroundColor(ansi.Red).Bold(),
		"stopped":    styleFaint,
	}
)

// View draws the whole screen: exactly height lines, none wider than
// width, so nothing ever wraps.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "harness top"
	return v
}

// Render is the screen as text (with styles), the body of View.
func (m *Model) Render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	m.refreshRows()
	now := m.o.Now()
	lines := make([]string, 0, m.height)
	lines = append(lines, m.fit(m.title(), styleBold))
	switch m.mode {
	case modeTable:
		lines = m.renderTable(lines, now)
	case modeLogs:
		lines = m.renderLogs(lines)
	case modeRuns:
		lines = m.renderRuns(lines, now)
	}
	lines = append(lines, m.statusLine(), m.fit(m.helpLine(), styleFaint))
	if len(lines) > m.height {
		// A terminal too short for the layout: keep the top and the help.
		lines = append(lines[:m.height-1], lines[len(lines)-1])
	}
	return strings.Join(lines, "\n")
}

// fit pads or cuts text to the width and styles it.
func (m *Model) fit(text string, st ansi.Style) string {
	s := pad(text, m.width, false)
	if len(st) == 0 {
		return s
	}
	return st.Styled(s)
}

func (m *Model) title() string {
	c := countFleet(m.units, m.ups)
	t := fmt.Sprintf("harness top · %d harnesses, %d running", c.harnesses, c.running)
	if c.failed > 0 {
		t += fmt.Sprintf(", %d failing", c.failed)
	}
	t += fmt.Sprintf(" · %d upstreams", c.upstreams)
	if hs, ok := m.o.Backend.(hostsBackend); ok {
		hosts, down := hs.Hosts(), 0
		for _, h := range hosts {
			if h.Down != "" {
				down++
			}
		}
		t += fmt.Sprintf(" · %d hosts", len(hosts))
		if down > 0 {
			t += fmt.Sprintf(", %d down", down)
		}
	}
	switch m.mode {
	case modeLogs:
		t += " · logs of " + m.sel
	case modeRuns:
		t += " · runs of " + m.sel
	default:
		if m.filter != "" {
			t += fmt.Sprintf(" · filter %q", m.filter)
		}
	}
	return t
}

// nameWidth is the widest first cell among the rows.
func (m *Model) nameWidth() int {
	w := 0
	for _, r := range m.rows {
		if r.selectable() {
			w = max(w, textWidth(r.label()))
		}
	}
	return w
}

func (m *Model) renderTable(lines []string, now time.Time) []string {
	tableH, previewH := m.geometry()
	ps := layoutColumns(fleetColumns, m.width, m.nameWidth())
	lines = append(lines, m.fit(header(ps), styleBold))
	for i := m.top; i < m.top+tableH; i++ {
		switch {
		case i >= len(m.rows):
			if i == 0 && m.listed {
				lines = append(lines, m.fit(m.emptyText(), styleFaint))
			} else {
				lines = append(lines, "")
			}
		case !m.rows[i].selectable():
			lines = append(lines, m.fit(m.rows[i].label(), styleBold))
		default:
			lines = append(lines, m.renderRow(ps, m.rows[i], i == m.selIdx, now))
		}
	}
	if previewH > 0 {
		lines = m.renderPreview(lines, previewH)
	}
	return lines
}

func (m *Model) emptyText() string {
	if m.filter != "" {
		return fmt.Sprintf("nothing matches %q (Esc clears the filter)", m.filter)
	}
	return "no harnesses or upstreams configured"
}

// renderRow draws one unit: the selected one in reverse video, the state
// of the others in its colour.
func (m *Model) renderRow(ps []placed, r row, selected bool, now time.Time) string {
	cells := make([]string, len(ps))
	for i, p := range ps {
		cells[i] = pad(p.cell(r, now), p.width, p.right)
		if !selected && p.title == "STATE" {
			if st, ok := stateStyles[strings.TrimSpace(cells[i])]; ok {
				cells[i] = st.Styled(cells[i])
			}
		}
		if !selected && p.title == "ACTIVITY" && agentShown(r) {
			if st, ok := agentStyles[r.unit.AgentState]; ok {
				cells[i] = st.Styled(cells[i])
			}
		}
	}
	line := strings.Join(cells, strings.Repeat(" ", gap))
	if selected {
		// The cells are plain here, so the padding makes a full bar.
		return styleSelected.Styled(pad(line, m.width, false))
	}
	return line
}

// renderPreview draws the preview of the selection in h lines, its
// heading first.
func (m *Model) renderPreview(lines []string, h int) []string {
	p := &m.preview
	head := "preview"
	if m.sel != "" {
		head += " of " + m.sel
		if st := m.stateOf(m.sel); st != "" {
			head += " (" + st + ")"
		}
		if u, ok := m.units[m.sel]; ok && u.Hold != nil {
			head += " · held: " + holdCell(row{kind: rowUnit, unit: u}, m.o.Now())
		}
	}
	lines = append(lines, styleFaint.Styled(rule(head, m.width)))
	return append(lines, m.paneBody(p, h-1, 0)...)
}

// rule is a heading drawn into a line of width w: "── head ───…".
func rule(head string, w int) string {
	const lead = 3 // "── "
	if w < lead+1 {
		return strings.Repeat("─", max(w, 0))
	}
	head = pad(head, min(textWidth(clean(head)), w-lead-1), false)
	return "── " + head + " " + strings.Repeat("─", w-lead-1-textWidth(head))
}

// paneBody is the last h lines of a text pane, scroll lines up from its
// end, or what stands in for them.
func (m *Model) paneBody(p *pane, h, scroll int) []string {
	var text []string
	switch {
	case m.sel == "":
		text = []string{"(nothing selected)"}
	case p.err != "":
		return padLines([]string{styleErr.Styled(pad(p.err, m.width, false))}, h)
	case !p.loaded:
		text = []string{"…"}
	case len(p.lines) == 0:
		text = []string{"(no output yet)"}
	default:
		end := max(len(p.lines)-scroll, min(h, len(p.lines)))
		text = p.lines[max(end-h, 0):end]
	}
	out := make([]string, 0, h)
	for _, t := range text {
		out = append(out, pad(t, m.width, false))
	}
	return padLines(out, h)
}

// padLines cuts or fills lines to exactly h.
func padLines(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

func (m *Model) stateOf(name string) string {
	if u, ok := m.units[name]; ok {
		return u.State
	}
	if up, ok := m.ups[name]; ok {
		return up.State
	}
	return ""
}

func (m *Model) renderLogs(lines []string) []string {
	h, _ := m.geometry()
	m.scroll = min(m.scroll, max(len(m.logs.lines)-h, 0))
	sub := "activity entries of " + m.sel
	if st := m.stateOf(m.sel); st != "" {
		sub += " (" + st + ")"
	}
	if m.scroll > 0 {
		sub += fmt.Sprintf(" · %d lines up (End follows)", m.scroll)
	}
	lines = append(lines, m.fit(sub, styleBold))
	return append(lines, m.paneBody(&m.logs, h, m.scroll)...)
}

var runColumns = []struct {
	title string
	width int
	right bool
}{{"RUN", 6, true}, {"CAUSE", 9, false}, {"PID", 7, true}, {"STARTED", 12, false}, {"ENDED", 12, false}, {"EXIT", 10, false}}

func (m *Model) renderRuns(lines []string, now time.Time) []string {
	h, _ := m.geometry()
	cells := make([]string, len(runColumns))
	for i, c := range runColumns {
		cells[i] = pad(c.title, c.width, c.right)
	}
	lines = append(lines, m.fit(strings.Join(cells, "  "), styleBold))
	var body []string
	switch {
	case m.runs.err != "":
		body = []string{styleErr.Styled(pad(m.runs.err, m.width, false))}
	case !m.runs.loaded:
		body = []string{"…"}
	case len(m.runs.runs) == 0:
		body = []string{"(no runs yet)"}
	default:
		rs := m.runs.runs // newest first (onRuns)
		m.scroll = min(m.scroll, max(len(rs)-h, 0))
		for _, r := range rs[min(m.scroll, len(rs)):] {
			vals := []string{strconv.FormatUint(r.ID, 10), string(r.Cause), pidText(r.PID), clock(r.StartedAt, now), "-", "running"}
			if r.EndedAt != nil {
				vals[4], vals[5] = clock(*r.EndedAt, now), exitText(r)
			}
			for i, c := range runColumns {
				cells[i] = pad(vals[i], c.width, c.right)
			}
			body = append(body, pad(strings.Join(cells, "  "), m.width, false))
			if len(body) == h {
				break
			}
		}
	}
	return append(lines, padLines(body, h)...)
}

func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// exitText is how a run ended: its code, or the signal that ended it.
func exitText(r api.Run) string {
	switch {
	case r.Signal != "":
		return r.Signal
	case r.ExitCode != nil:
		return strconv.Itoa(*r.ExitCode)
	}
	return "?"
}

// statusLine is the line being typed, else the last message.
func (m *Model) statusLine() string {
	if e := m.edit; e != nil {
		prompt := "/"
		if e.send {
			prompt = "send to " + e.unit + " (Enter sends, Esc cancels): "
		}
		// Keep the end of a long line in view, where the typing is.
		text := prompt + string(e.text) + "█"
		if ansi.StringWidth(text) > m.width {
			text = ansi.TruncateLeft(text, ansi.StringWidth(text)-m.width, "")
		}
		return pad(text, m.width, false)
	}
	if m.statusErr {
		return m.fit(m.status, styleErr)
	}
	return m.fit(m.status, nil)
}

// helpLine lists the keys that work now, dropping the least important
// ones when they do not all fit.
func (m *Model) helpLine() string {
	var shown []*binding
	for i := range bindings {
		if b := &bindings[i]; b.label != "" && b.active(m) {
			shown = append(shown, b)
		}
	}
	text := func() string {
		parts := make([]string, len(shown))
		for i, b := range shown {
			parts[i] = b.label + " " + b.help
		}
		return strings.Join(parts, "  ")
	}
	for len(shown) > 1 && ansi.StringWidth(text()) > m.width {
		low := 0
		for i, b := range shown {
			if b.prio < shown[low].prio {
				low = i
			}
		}
		shown = append(shown[:low], shown[low+1:]...)
	}
	return text()
}
