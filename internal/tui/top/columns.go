package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// gap is the space between two columns.
const gap = 2

// optional is the drop rank from which a column goes before any shrinks.
const optional = 10

// column is one column of the fleet table. When the columns do not fit,
// the optional ones go first (drop >= optional, highest first), then the
// rest shrink towards min, then more go (any drop > 0, highest first);
// room left over goes to the description, else to the name.
type column struct {
	title, short string // the heading, and the one used when title does not fit
	min, max     int
	drop         int
	grow         bool
	right        bool
	cell         func(r row, now time.Time) string
}

var fleetColumns = []column{
	{title: "NAME", min: 8, max: 32, grow: true, cell: func(r row, _ time.Time) string { return r.label() }},
	{title: "STATE", min: 8, max: 10, cell: func(r row, _ time.Time) string {
		if r.kind == rowUpstream {
			return r.up.State
		}
		if r.unit.Hold != nil && r.unit.PID == 0 {
			return "held" // a held harness that does not run: holdCell says why in the preview
		}
		return r.unit.State
	}},
	{title: "ACTIVITY", short: "ACT", min: 6, max: 10, drop: 3, cell: activityCell},
	{title: "RESTARTS", short: "RST", min: 3, max: 8, drop: 6, right: true, cell: func(r row, _ time.Time) string {
		if r.kind == rowUpstream {
			return strconv.Itoa(r.up.Restarts)
		}
		return strconv.Itoa(r.unit.RestartCount)
	}},
	{title: "EXIT", min: 4, max: 4, drop: 5, right: true, cell: func(r row, _ time.Time) string {
		if r.kind == rowUnit && r.unit.LastExitCode != nil {
			return strconv.Itoa(*r.unit.LastExitCode)
		}
		return "-"
	}},
	{title: "NEXT FIRE", short: "NEXT", min: 8, max: 12, drop: 4, cell: func(r row, now time.Time) string {
		switch {
		case r.kind == rowUnit && r.unit.NextFire != nil:
			return clock(*r.unit.NextFire, now)
		case r.kind == rowUpstream && r.up.NextRetry != nil:
			return clock(*r.up.NextRetry, now)
		}
		return "-"
	}},
	// An upstream's tools/calls since the daemon started (the call log).
	{title: "CALLS", min: 5, max: 8, drop: optional + 2, right: true, cell: func(r row, _ time.Time) string {
		if r.kind != rowUpstream {
			return "-"
		}
		return strconv.FormatUint(r.up.Calls.Calls, 10)
	}},
	{title: "PID", min: 7, max: 7, drop: optional + 1, right: true, cell: func(r row, _ time.Time) string {
		pid := 0
		if r.kind == rowUpstream {
			pid = r.up.PID
		} else {
			pid = r.unit.PID
		}
		return pidText(pid)
	}},
	{title: "DESCRIPTION", short: "DESC", min: 12, max: 12, drop: optional, grow: true, cell: func(r row, _ time.Time) string {
		if r.kind == rowUpstream {
			return r.up.LastError
		}
		return r.unit.Description
	}},
}

// activityCell is busy, idle with how long, or for an upstream its tool
// count; "-" while the daemon reports no activity. A known agent shows its
// agent state instead: working, waiting, ready, limited, ...
func activityCell(r row, now time.Time) string {
	if r.kind == rowUpstream {
		return fmt.Sprintf("%d tools", r.up.Tools)
	}
	if agentShown(r) {
		return string(r.unit.AgentState)
	}
	if d, ok := r.unit.idleFor(now); ok {
		return "idle " + age(d)
	}
	if r.unit.Activity != "" {
		return r.unit.Activity
	}
	return "-"
}

// holdCell is a harness's hold: "usage_limit 14:05:00", "hours Mon 08:00"
// ("-" when none).
func holdCell(r row, now time.Time) string {
	if r.kind != rowUnit || r.unit.Hold == nil {
		return "-"
	}
	if r.unit.Hold.Until == nil {
		return string(r.unit.Hold.Reason)
	}
	return string(r.unit.Hold.Reason) + " " + clock(*r.unit.Hold.Until, now)
}

// agentShown reports whether a row's activity cell shows its agent state
// (docs/design/agents.md) instead of busy/idle: for a known agent with a run. A
// generic harness's state is busy/idle under other names.
func agentShown(r row) bool {
	return r.kind == rowUnit && r.unit.AgentState != "" && r.unit.Agent != "generic"
}

// age is a duration in one unit, coarse enough to fit a narrow column.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// clock is t as a time of day, with the date when it is not today.
func clock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04")
}

// placed is a column with the width it got.
type placed struct {
	*column
	width int
}

// layoutColumns fits the columns into width. nameW is the widest name
// among the rows, which the name column need not exceed.
func layoutColumns(cols []column, width, nameW int) []placed {
	ps := make([]placed, 0, len(cols))
	for i := range cols {
		c := &cols[i]
		w := c.max
		if i == 0 {
			w = min(max(nameW, c.min), c.max)
		}
		ps = append(ps, placed{c, w})
	}
	total := func() int {
		t := gap * (len(ps) - 1)
		for _, p := range ps {
			t += p.width
		}
		return t
	}
	dropOne := func(from int) bool {
		worst := -1
		for i, p := range ps {
			if p.drop >= from && (worst < 0 || p.drop > ps[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			return false
		}
		ps = append(ps[:worst], ps[worst+1:]...)
		return true
	}
	for total() > width && dropOne(optional) {
	}
	// Still too wide: shrink from the right, the name last.
	for i := len(ps) - 1; i >= 0 && total() > width; i-- {
		ps[i].width = max(ps[i].min, ps[i].width-(total()-width))
	}
	for total() > width && dropOne(1) {
	}
	if over := total() - width; over > 0 {
		ps[0].width = max(ps[0].width-over, 1) // the name and the state alone overflow
	}
	for len(ps) > 1 && total() > width {
		ps = ps[:len(ps)-1]
	}
	if len(ps) == 1 {
		ps[0].width = min(ps[0].width, max(width, 0))
	}
	// Room left: the description takes it when shown, else the name.
	if extra := width - total(); extra > 0 && len(ps) > 0 {
		target := 0
		if last := len(ps) - 1; last > 0 && ps[last].grow {
			target = last
		}
		ps[target].width += extra
	}
	return ps
}

// header is the table's column heading.
func header(ps []placed) string {
	cells := make([]string, len(ps))
	for i, p := range ps {
		t := p.title
		if textWidth(t) > p.width && p.short != "" {
			t = p.short
		}
		cells[i] = pad(t, p.width, p.right)
	}
	return strings.Join(cells, strings.Repeat(" ", gap))
}

// pad fits s into exactly w cells: truncated with an ellipsis, or padded.
func pad(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	s = clean(s)
	n := textWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = textWidth(s)
	}
	fill := strings.Repeat(" ", w-n)
	if right {
		return fill + s
	}
	return s + fill
}

// clean makes text safe to draw in one line: escape sequences removed and
// control characters (tabs, newlines) turned into spaces.
func clean(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

// textWidth is the cells s takes on screen. Most of what the dashboard
// draws is plain ASCII, whose width is its length; only other text pays
// for grapheme segmentation.
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
