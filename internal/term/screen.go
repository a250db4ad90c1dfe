package term

import (
	"strconv"
	"strings"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// Snapshot is what the screen of a unit shows.
type Snapshot struct {
	Cols      int      `json:"cols"`
	Rows      int      `json:"rows"`
	Lines     []string `json:"lines"` // one per row, trailing blanks trimmed
	Cursor    Cursor   `json:"cursor"`
	Title     string   `json:"title"`
	AltScreen bool     `json:"alt_screen"`
	// Scrollback holds up to the requested number of lines that left the
	// main screen, oldest first.
	Scrollback []string `json:"scrollback,omitempty"`
	// ANSI holds the rows again with their colours and attributes as SGR
	// sequences, each row ending with its style reset; only on request.
	ANSI []string `json:"ansi,omitempty"`
}

// Cursor is where the program's cursor is, 0-based.
type Cursor struct {
	Row     int  `json:"row"`
	Col     int  `json:"col"`
	Visible bool `json:"visible"`
}

// SnapshotOptions choose the optional parts of a Snapshot.
type SnapshotOptions struct {
	Scrollback int  // at most this many scrollback lines (0: none)
	ANSI       bool // fill Snapshot.ANSI
}

// Snapshot copies out the screen.
func (t *Term) Snapshot(o SnapshotOptions) Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	scr := t.activeLocked()
	if scr == nil {
		// Nothing printed this run: a blank screen, the cursor home.
		s := Snapshot{Cols: t.cols, Rows: t.rows, Lines: make([]string, t.rows), Cursor: Cursor{Visible: true}}
		if o.Scrollback > 0 {
			s.Scrollback = t.hist.last(o.Scrollback)
		}
		if o.ANSI {
			s.ANSI = make([]string, t.rows)
		}
		return s
	}
	pos := t.em.CursorPosition()
	s := Snapshot{
		Cols: t.cols, Rows: t.rows,
		Lines:     t.rowTextsLocked(scr),
		Cursor:    Cursor{Row: pos.Y, Col: pos.X, Visible: !t.em.CursorHidden()},
		Title:     t.title,
		AltScreen: scr == t.alt,
	}
	if o.Scrollback > 0 {
		s.Scrollback = t.hist.last(o.Scrollback)
	}
	if o.ANSI {
		s.ANSI = make([]string, t.rows)
		t.eachRowLocked(scr, func(y int, l uv.Line) { s.ANSI[y] = t.rowANSILocked(l) })
	}
	return s
}

// Repaint returns what makes a terminal of the same size show s: a cleared
// screen, every row with its colours, the cursor where the program left it
// and shown or hidden as it wants. s must have been taken with ANSI.
func (s Snapshot) Repaint() string {
	var b strings.Builder
	b.WriteString("\x1b[m\x1b[H\x1b[2J")
	for y, row := range s.ANSI {
		if row == "" {
			continue
		}
		b.WriteString("\x1b[" + strconv.Itoa(y+1) + "H")
		b.WriteString(row)
	}
	b.WriteString("\x1b[m\x1b[" + strconv.Itoa(s.Cursor.Row+1) + ";" + strconv.Itoa(s.Cursor.Col+1) + "H")
	if s.Cursor.Visible {
		b.WriteString("\x1b[?25h")
	} else {
		b.WriteString("\x1b[?25l")
	}
	return b.String()
}

// rowTextsLocked returns the text of every row of scr.
func (t *Term) rowTextsLocked(scr *vt.Screen) []string {
	out := make([]string, t.rows)
	t.eachRowLocked(scr, func(y int, l uv.Line) { out[y] = t.rowTextLocked(l) })
	return out
}

// rowTextLocked is a row as text: a cell the program never wrote (or moved
// the cursor over) is a space, a wide character's second cell adds
// nothing, trailing blanks are trimmed.
func (t *Term) rowTextLocked(l uv.Line) string {
	return t.lineTextLocked(l[:min(len(l), t.cols)])
}

// lineText is the text of a line that left a screen.
func (t *Term) lineTextLocked(l uv.Line) string {
	b := t.rowBuf[:0]
	for i := range l {
		b = appendCell(b, &l[i])
	}
	t.rowBuf = b
	return trimRight(b)
}

func appendCell(b []byte, c *uv.Cell) []byte {
	switch {
	case c.Width == 0 && c.Content == "":
		return b // the second half of a wide character
	case c.Content == "":
		return append(b, ' ')
	}
	return append(b, c.Content...)
}

func trimRight(b []byte) string {
	n := len(b)
	for n > 0 && (b[n-1] == ' ' || b[n-1] == '\t') {
		n--
	}
	return string(b[:n])
}

// rowANSILocked renders a row with its styles and hyperlinks, without its
// trailing blank cells (as Lines are trimmed; ultraviolet writes them out
// as spaces).
func (t *Term) rowANSILocked(l uv.Line) string {
	l = l[:min(len(l), t.cols)]
	n := len(l)
	for n > 0 && (l[n-1].IsZero() || l[n-1].Equal(&uv.EmptyCell)) {
		n--
	}
	return l[:n].Render()
}
