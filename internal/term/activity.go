package term

import "time"

// Activity lines (docs/design/terminals.md): what the screen showed, as lines, once each.
//
// The rule:
//
//   - A line that scrolls off the top of the screen is taken at the next
//     sample (or at once when a screenful is waiting), unless it was taken
//     while it was on the screen.
//   - The screen is sampled every Options.Sample while output arrives, and
//     once more after it stops. A row is taken when it shows the same text
//     at two samples in a row, or at the first sample after output stopped.
//     A row redrawn with the same text is the same row, also when the frame
//     moved up or down: rows are matched to the previous sample by text
//     (longest common subsequence), so a repeated frame adds nothing and a
//     frame that grew adds only its new rows.
//   - The row of a visible cursor is still being written (a prompt, a
//     progress bar redrawn after CR): it is taken when the cursor leaves
//     it, when it scrolls off, or when the unit goes idle, so a CR progress
//     line lands once with its final text. A hidden cursor marks nothing:
//     TUIs hide it and park it anywhere (Claude Code parks it on the
//     selected item of a menu, which must not wait for idle). A progress
//     bar drawn with the cursor hidden and updated more slowly than two
//     samples gives a line per update.
//   - Erasing the display (ED 2/3, RIS) or leaving the alternate screen
//     takes the rows that were about to vanish if a sample had seen them;
//     rows that lived for less than a sample are not worth an entry. Rows
//     drawn again after being erased (by a clear, or line by line), with
//     the text they had when taken, are a redraw and add nothing, also
//     when a sample caught the frame half drawn: taken rows that vanish
//     are remembered for ghostTTL (and forgotten when the unit goes idle).
//   - Entering the alternate screen takes everything the main screen shows;
//     leaving it resumes the main screen where it was.
//   - Idle (Options.IdleAfter without output), Flush (the run ended) and
//     Resize take everything still pending, the cursor's row included.
//
// Blank rows are never lines; trailing blanks are trimmed.

// takeKind says how much a sample may take.
type takeKind int

const (
	takeStable takeKind = iota // output is still arriving: rows seen unchanged twice
	takeQuiet                  // no output since the last sample: every row but the cursor's
	takeAll                    // idle, flush, resize: every row
)

// item is a line of a sample, or one that left the screen.
type item struct {
	text    string
	row     int  // row on the screen; -1 for a line that left it
	emitted bool // already an activity line
	seen    int  // samples in a row that found this text unchanged
}

// activity turns screen samples and departing lines into activity lines.
// It belongs to a Term and runs under its lock.
type activity struct {
	prev      []item  // the active screen's non-blank rows at the last sample
	ghosts    []ghost // taken rows that were erased lately
	mainPrev  []item  // prev of the main screen while the alternate one is up
	inAlt     bool
	open      []string // lines that left the screen since the last sample or clear
	streaming bool     // open held a screenful: later departures are new for sure
	dp        []uint16 // scratch for align
	match     []int    // scratch for align
}

func (a *activity) reset() {
	*a = activity{dp: a.dp[:0], match: a.match[:0]}
}

// left takes a line that left the screen by scrolling. Only the first
// screenful of departures since the last sample can be rows that sample
// saw; anything after that is new, so a screenful is settled at once and
// the rest goes straight out. That bounds the memory a flood of output
// needs here.
func (a *activity) left(s string, rows int, emit func([]string)) {
	if s == "" {
		return
	}
	if a.streaming {
		emit([]string{s})
		return
	}
	a.open = append(a.open, s)
	if len(a.open) >= rows {
		a.commitOpen(emit)
		a.streaming = true
	}
}

// commitOpen settles the departed lines: each is taken unless it was taken
// as a row; the rows they matched are no longer on the screen.
func (a *activity) commitOpen(emit func([]string)) {
	if len(a.open) == 0 {
		return
	}
	m := a.align(a.prev, a.open)
	var out []string
	gone := make([]bool, len(a.prev))
	for i, s := range a.open {
		if p := m[i]; p >= 0 {
			gone[p] = true
			if a.prev[p].emitted {
				continue
			}
		}
		out = append(out, s)
	}
	kept := a.prev[:0]
	for i, it := range a.prev {
		if !gone[i] {
			kept = append(kept, it)
		}
	}
	clear(a.prev[len(kept):])
	a.prev = kept
	clear(a.open)
	a.open = a.open[:0]
	if len(out) > 0 {
		emit(out)
	}
}

// cleared takes the rows of a screen that is being erased, if a sample saw
// them, and keeps the previous sample so that a redraw of the same rows is
// recognised.
func (a *activity) cleared(rows []string, emit func([]string)) {
	a.commitOpen(emit)
	a.streaming = false
	texts := nonBlank(rows)
	m := a.align(a.prev, texts)
	var out []string
	for i, s := range texts {
		if p := m[i]; p >= 0 && !a.prev[p].emitted {
			a.prev[p].emitted = true
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		emit(out)
	}
}

// sample examines the screen: rows are its rows' text, cursor the cursor's
// row. It reports whether rows are left that a later sample could take
// (the cursor's row waits for idle and does not count).
func (a *activity) sample(rows []string, cursor int, kind takeKind, now time.Time, emit func([]string)) (pending bool) {
	a.expireGhosts(now)
	tape := make([]item, 0, len(a.open)+len(rows))
	for _, s := range a.open {
		tape = append(tape, item{text: s, row: -1})
	}
	for y, s := range rows {
		if s != "" {
			tape = append(tape, item{text: s, row: y})
		}
	}
	texts := make([]string, len(tape))
	for i, it := range tape {
		texts[i] = it.text
	}
	m := a.align(a.prev, texts)
	matched := make([]bool, len(a.prev))
	var out []string
	for i := range tape {
		it := &tape[i]
		if p := m[i]; p >= 0 {
			matched[p] = true
			it.emitted = a.prev[p].emitted
			it.seen = a.prev[p].seen + 1
		} else if it.row >= 0 && a.unghost(it.text) {
			it.emitted = true // a taken row, erased and drawn again
		}
		if it.emitted {
			continue
		}
		take := it.row < 0 || kind == takeAll ||
			it.row != cursor && (it.seen >= 1 || kind == takeQuiet)
		if take {
			it.emitted = true
			out = append(out, it.text)
		} else if it.row != cursor {
			pending = true
		}
	}
	if kind == takeAll {
		clear(a.ghosts) // idle or flushed: what was not drawn again is gone
		a.ghosts = a.ghosts[:0]
	} else {
		for p, it := range a.prev {
			if !matched[p] && it.emitted {
				a.ghost(it.text, now)
			}
		}
	}
	clear(a.prev)
	a.prev = append(a.prev[:0], tape[len(a.open):]...)
	clear(a.open)
	a.open = a.open[:0]
	a.streaming = false
	if len(out) > 0 {
		emit(out)
	}
	return pending
}

// ghost is a taken row that vanished from the screen at a time.
type ghost struct {
	text string
	at   time.Time
}

// Bounds of the memory of erased rows: how long, and how many.
const (
	ghostTTL  = 3 * time.Second
	maxGhosts = 256
)

// ghost remembers a taken row that vanished; the oldest are forgotten
// beyond maxGhosts.
func (a *activity) ghost(s string, now time.Time) {
	if len(a.ghosts) >= maxGhosts {
		a.ghosts = append(a.ghosts[:0], a.ghosts[1:]...)
	}
	a.ghosts = append(a.ghosts, ghost{s, now})
}

// unghost reports whether s is a remembered row, and forgets it.
func (a *activity) unghost(s string) bool {
	for i, g := range a.ghosts {
		if g.text == s {
			a.ghosts = append(a.ghosts[:i], a.ghosts[i+1:]...)
			return true
		}
	}
	return false
}

func (a *activity) expireGhosts(now time.Time) {
	i := 0
	for i < len(a.ghosts) && now.Sub(a.ghosts[i].at) > ghostTTL {
		i++
	}
	if i > 0 {
		a.ghosts = append(a.ghosts[:0], a.ghosts[i:]...)
	}
}

// enterAlt sets the main screen's state aside; the caller has taken the
// main screen's rows already.
func (a *activity) enterAlt() {
	if a.inAlt {
		return
	}
	a.inAlt = true
	a.mainPrev, a.prev = a.prev, nil
	a.open, a.streaming, a.ghosts = a.open[:0], false, a.ghosts[:0]
}

// leaveAlt resumes the main screen's state; the caller has taken the
// alternate screen's rows already.
func (a *activity) leaveAlt() {
	if !a.inAlt {
		return
	}
	a.inAlt = false
	a.prev, a.mainPrev = a.mainPrev, nil
	a.open, a.streaming, a.ghosts = a.open[:0], false, a.ghosts[:0]
}

// resized forgets where rows were: the caller took them all before.
func (a *activity) resized() {
	a.open, a.streaming = a.open[:0], false
}

// align matches texts against prev in order (longest common subsequence
// of equal texts) and returns, for each of texts, the index of its match
// in prev or -1. The result is valid until the next call.
func (a *activity) align(prev []item, texts []string) []int {
	n, m := len(prev), len(texts)
	a.match = a.match[:0]
	for range m {
		a.match = append(a.match, -1)
	}
	if n == 0 || m == 0 {
		return a.match
	}
	w := m + 1
	size := (n + 1) * w
	if cap(a.dp) < size {
		a.dp = make([]uint16, size)
	}
	dp := a.dp[:size]
	// dp[i*w+j] = LCS of prev[i:] and texts[j:]
	for j := 0; j <= m; j++ {
		dp[n*w+j] = 0
	}
	for i := n - 1; i >= 0; i-- {
		dp[i*w+m] = 0
		for j := m - 1; j >= 0; j-- {
			switch {
			case prev[i].text == texts[j]:
				dp[i*w+j] = dp[(i+1)*w+j+1] + 1
			case dp[(i+1)*w+j] >= dp[i*w+j+1]:
				dp[i*w+j] = dp[(i+1)*w+j]
			default:
				dp[i*w+j] = dp[i*w+j+1]
			}
		}
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case prev[i].text == texts[j]:
			a.match[j] = i
			i++
			j++
		case dp[(i+1)*w+j] >= dp[i*w+j+1]:
			i++
		default:
			j++
		}
	}
	return a.match
}

func nonBlank(rows []string) []string {
	out := make([]string, 0, len(rows))
	for _, s := range rows {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
