package term

import (
	"fmt"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// Parking. A screen's cells are most of what a Term costs: x/vt keeps a
// 112-byte uv.Cell for each of the 4800 cells of a 120x40 screen (0.5 MB),
// twice on the alternate screen, whether they show anything or not. Most
// units are idle most of the time (an agent waiting on a dialog, a
// harness that never printed), so while a unit is idle its cells are kept
// in a compact form instead: per row, its text and runs of identical
// cells, with the styles in a table. The emulator itself, with its modes,
// cursors, scroll region and parser, is not touched: only the cell grid
// of each screen is swapped for a 1x1 placeholder, and swapped back
// (rebuilt) before the emulator sees output or a resize again. Readers
// (Snapshot, the activity samples) read a parked screen row by row.
//
// A screen is parked only after its compact form has been decoded and
// found equal, cell by cell, to the grid it replaces; otherwise it stays
// as it is.

// cellStyle is what a cell carries besides its content and width.
type cellStyle struct {
	style uv.Style
	link  uv.Link
}

// cellRun is n identical cells: size bytes of content, width, style.
type cellRun struct {
	n     uint16
	size  uint8
	width uint8
	style uint16 // index into parkedScreen.styles
}

// parkedRow is one row: the content of each run once, in order, and the runs.
type parkedRow struct {
	text string
	runs []cellRun
}

// parkedScreen is a screen's cell grid in compact form.
type parkedScreen struct {
	cols   int
	rows   []parkedRow
	styles []cellStyle
}

// parkGrid encodes buf, and checks the encoding decodes to buf exactly.
// It fails (and buf stays in use) on a cell it cannot encode exactly: a
// grapheme over 255 bytes, a width over 255, more than 65535 styles, or a
// colour of a type that cannot be compared.
func parkGrid(buf *uv.RenderBuffer) (p *parkedScreen, err error) {
	defer func() {
		if r := recover(); r != nil { // a non-comparable colour type in a map key or ==
			p, err = nil, fmt.Errorf("term: park: %v", r)
		}
	}()
	if buf == nil || len(buf.Lines) == 0 {
		return nil, fmt.Errorf("term: park: no grid")
	}
	cols := len(buf.Lines[0])
	p = &parkedScreen{cols: cols, rows: make([]parkedRow, len(buf.Lines)), styles: []cellStyle{{}}}
	index := map[cellStyle]uint16{{}: 0}
	var text []byte
	var runs []cellRun
	for y, line := range buf.Lines {
		if len(line) != cols {
			return nil, fmt.Errorf("term: park: row %d has %d cells, not %d", y, len(line), cols)
		}
		text, runs = text[:0], runs[:0]
		for x := range line {
			c := &line[x]
			if len(c.Content) > 255 || c.Width < 0 || c.Width > 255 {
				return nil, fmt.Errorf("term: park: cell %d,%d: content of %d bytes, width %d", x, y, len(c.Content), c.Width)
			}
			k := cellStyle{c.Style, c.Link}
			si, ok := index[k]
			if !ok {
				if len(p.styles) > 0xffff {
					return nil, fmt.Errorf("term: park: more than %d styles", 0xffff)
				}
				si = uint16(len(p.styles))
				index[k] = si
				p.styles = append(p.styles, k)
			}
			if n := len(runs); n > 0 {
				last := &runs[n-1]
				if last.n < 0xffff && last.style == si && int(last.width) == c.Width &&
					int(last.size) == len(c.Content) && string(text[len(text)-len(c.Content):]) == c.Content {
					last.n++
					continue
				}
			}
			runs = append(runs, cellRun{n: 1, size: uint8(len(c.Content)), width: uint8(c.Width), style: si})
			text = append(text, c.Content...)
		}
		p.rows[y] = parkedRow{text: string(text), runs: append([]cellRun(nil), runs...)}
	}
	line := make(uv.Line, cols)
	for y := range p.rows {
		p.decodeRow(y, line)
		for x := range line {
			if line[x] != buf.Lines[y][x] {
				return nil, fmt.Errorf("term: park: cell %d,%d decodes as %+v, not %+v", x, y, line[x], buf.Lines[y][x])
			}
		}
	}
	return p, nil
}

// decodeRow writes row y into line (of p.cols cells).
func (p *parkedScreen) decodeRow(y int, line uv.Line) {
	r := p.rows[y]
	off, x := 0, 0
	for _, run := range r.runs {
		s := p.styles[run.style]
		c := uv.Cell{Content: r.text[off : off+int(run.size)], Width: int(run.width), Style: s.style, Link: s.link}
		for range run.n {
			line[x] = c
			x++
		}
		off += int(run.size)
	}
}

// grid rebuilds the cell grid.
func (p *parkedScreen) grid() *uv.RenderBuffer {
	b := uv.NewRenderBuffer(p.cols, len(p.rows))
	for y := range p.rows {
		p.decodeRow(y, b.Lines[y])
	}
	return b
}

// parkLocked parks every screen that is live and larger than a
// placeholder. A screen that cannot be parked exactly stays live.
func (t *Term) parkLocked() {
	if t.noParked {
		return
	}
	for i, b := range t.bufs {
		if b == nil || t.parked[i] != nil || *b == nil || len((*b).Lines) <= 1 {
			continue
		}
		p, err := parkGrid(*b)
		if err != nil {
			continue // kept as it is; the next idle tries again
		}
		t.parked[i] = p
		*b = uv.NewRenderBuffer(1, 1)
	}
	if t.parked[0] != nil {
		// Scratch of the samples, grown again by the next one.
		t.act.dp, t.act.match, t.rowBuf = nil, nil, nil
	}
	if t.parked[0] != nil && !t.captureParked {
		// Drained already, and nothing scrolls until the next output.
		t.main.SetScrollback(nil)
		t.alt.SetScrollback(nil)
		t.captureParked = true
	}
}

// liveLocked rebuilds the grids of parked screens, before the emulator
// writes to them or resizes them.
func (t *Term) liveLocked() {
	for i, p := range t.parked {
		if p != nil {
			*t.bufs[i] = p.grid()
			t.parked[i] = nil
		}
	}
	if t.captureParked {
		t.setCaptureLocked()
		t.captureParked = false
	}
}

// eachRowLocked calls f with the cells of every row of scr (t.rows rows; a
// row shorter than t.cols, or missing, reads as blank).
func (t *Term) eachRowLocked(scr *vt.Screen, f func(y int, l uv.Line)) {
	i := 0
	if scr == t.alt {
		i = 1
	}
	if p := t.parked[i]; p != nil {
		line := make(uv.Line, p.cols)
		for y := range t.rows {
			if y < len(p.rows) {
				p.decodeRow(y, line)
				f(y, line)
			} else {
				f(y, nil)
			}
		}
		return
	}
	buf := *t.bufs[i]
	for y := range t.rows {
		var l uv.Line
		if buf != nil && y < len(buf.Lines) {
			l = buf.Lines[y]
		}
		f(y, l)
	}
}
