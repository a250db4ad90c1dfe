package term

import (
	"fmt"
	"image/color"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
)

// twins are two Terms fed the same output: a parks its grids whenever the
// test says, b never does. Whatever a reader sees, and the cells
// themselves once a is live again, must be the same.
type twins struct {
	t    *testing.T
	a, b *Term
}

func newTwins(t *testing.T, cols, rows int) *twins {
	a, b := New(Options{Cols: cols, Rows: rows}), New(Options{Cols: cols, Rows: rows})
	b.mu.Lock()
	b.noParked = true
	b.liveLocked()
	b.mu.Unlock()
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	return &twins{t: t, a: a, b: b}
}

func (w *twins) feed(p []byte) {
	w.a.Feed(p)
	w.b.Feed(p)
}

// park parks a's grids and reports how many screens it parked.
func (w *twins) park() int {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.a.parkLocked()
	n := 0
	for _, p := range w.a.parked {
		if p != nil {
			n++
		}
	}
	return n
}

// same fails unless both show the same; with cells, it also makes a live
// and compares every cell of both screens.
func (w *twins) same(step string, cells bool) {
	w.t.Helper()
	o := SnapshotOptions{Scrollback: 100, ANSI: true}
	sa, sb := w.a.Snapshot(o), w.b.Snapshot(o)
	if fmt.Sprintf("%#v", sa) != fmt.Sprintf("%#v", sb) {
		w.t.Fatalf("%s: parked and live twins differ:\n%#v\n%#v", step, sa, sb)
	}
	if w.a.BracketedPaste() != w.b.BracketedPaste() {
		w.t.Fatalf("%s: bracketed paste differs", step)
	}
	if !cells {
		return
	}
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if (w.a.em == nil) != (w.b.em == nil) {
		w.t.Fatalf("%s: one twin built its emulator, the other not", step)
	}
	if w.a.em == nil {
		return // nothing printed: no grids
	}
	w.a.liveLocked()
	for i := range w.a.bufs {
		ga, gb := *w.a.bufs[i], *w.b.bufs[i]
		if len(ga.Lines) != len(gb.Lines) {
			w.t.Fatalf("%s: screen %d has %d rows, live twin %d", step, i, len(ga.Lines), len(gb.Lines))
		}
		for y := range ga.Lines {
			if !slices.Equal(ga.Lines[y], gb.Lines[y]) {
				w.t.Fatalf("%s: screen %d row %d differs:\n%+v\n%+v", step, i, y, ga.Lines[y], gb.Lines[y])
			}
		}
	}
}

// tuiStart is what TUI agents print at start-up: true colour, 256
// colours, bold and dim, hyperlinks, box drawing, wide and combining
// characters, a scroll region, the alternate screen, a hidden cursor,
// bracketed paste, a title.
var tuiStart = []string{
	"\x1b]0;agent\x07\x1b[?2004h\x1b[38;2;120;80;200m▝▜▄\x1b[m Gemini-ish \x1b[1mbold\x1b[22m \x1b[2mdim\x1b[m\r\n",
	"\x1b]8;;https://example.com\x1b\\a link\x1b]8;;\x1b\\ 日本語 e\u0301 ok\r\n",
	" ╭──────────╮\r\n │ \x1b[32m●\x1b[m 1. Yes \x1b[14G│\r\n ╰──────────╯\r\n",
	"\x1b[2;4r\x1b[4;1Hscrolled\r\nin region\r\n\x1b[r\x1b[6;1H\x1b[48;5;236m  shaded  \x1b[m",
	"\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J\x1b[2;3HWelcome\x1b[5;3H\x1b[36m>\x1b[m 1. Sign in\x1b[6;5H2. Other",
	"\x1b[6;5H\x1b[7m2. Other\x1b[27m\x1b[1;1H",
	"\x1b[?1049l\x1b[?25hback on main\x1b[?2004l",
}

// TestParkedGridMatchesTheLiveOne: parked at every step of a TUI's
// start-up, a Term shows what a Term that never parks shows, and once
// live again its cells are the same; the output that follows a parking
// lands as it would have.
func TestParkedGridMatchesTheLiveOne(t *testing.T) {
	w := newTwins(t, 40, 8)
	if w.a.em != nil {
		t.Fatal("a term that saw no output built its emulator")
	}
	// A term that has not printed reads as an emulator's blank screen.
	blank := New(Options{Cols: 40, Rows: 8})
	defer blank.Close()
	feed(blank, "\x1b[m")
	o := SnapshotOptions{Scrollback: 10, ANSI: true}
	if got, want := fmt.Sprintf("%#v", w.a.Snapshot(o)), fmt.Sprintf("%#v", blank.Snapshot(o)); got != want {
		t.Fatalf("unprinted term reads\n%s\nan emulator's blank screen\n%s", got, want)
	}
	for i, p := range tuiStart {
		w.feed([]byte(p))
		if n := w.park(); n == 0 {
			t.Fatalf("step %d: nothing parked", i)
		}
		w.same(fmt.Sprintf("step %d parked", i), false)
		w.same(fmt.Sprintf("step %d live again", i), true)
	}
}

// TestIdleParksTheGrid: going idle parks the screen (the alternate one
// too while a program is on it); the next output brings it back.
func TestIdleParksTheGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := newTerm(t, Options{Cols: 30, Rows: 6, IdleAfter: time.Second})
		feed(tm, "before\r\n\x1b[?1049h\x1b[3;3Hdialog")
		parked := func() (n int) {
			tm.mu.Lock()
			defer tm.mu.Unlock()
			for _, p := range tm.parked {
				if p != nil {
					n++
				}
			}
			return n
		}
		if parked() != 0 {
			t.Fatal("parked while busy")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if tm.Activity().State != Idle || parked() != 2 {
			t.Fatalf("idle with %d screens parked, want both", parked())
		}
		if s := tm.Snapshot(SnapshotOptions{}); !s.AltScreen || s.Lines[2] != "  dialog" {
			t.Fatalf("parked snapshot %q", s.Lines)
		}
		feed(tm, "\x1b[3;9H!\x1b[?1049l")
		if parked() != 0 {
			t.Fatal("output left the screens parked")
		}
		if s := tm.Snapshot(SnapshotOptions{}); s.AltScreen || s.Lines[0] != "before" {
			t.Fatalf("after leaving the alternate screen %q", s.Lines)
		}
		settle()
	})
}

// oddColor is a colour type that cannot be compared (it holds a slice).
type oddColor struct{ parts []uint8 }

func (oddColor) RGBA() (r, g, b, a uint32) { return 0, 0, 0, 0xffff }

var _ color.Color = oddColor{}

// TestParkRefusesWhatItCannotKeepExactly: such a grid stays live.
func TestParkRefusesWhatItCannotKeepExactly(t *testing.T) {
	for name, c := range map[string]uv.Cell{
		"a 300-byte grapheme":       {Content: "e" + strings.Repeat("\u0301", 150), Width: 1},
		"a non-comparable colour":   {Content: "x", Width: 1, Style: uv.Style{Fg: oddColor{}}},
		"a width that does not fit": {Content: "x", Width: 300},
	} {
		b := uv.NewRenderBuffer(4, 2)
		b.Lines[1][2] = c
		if p, err := parkGrid(b); err == nil || p != nil {
			t.Errorf("%s: parked (%v)", name, err)
		}
	}
	b := uv.NewRenderBuffer(4, 2)
	b.Lines[0][1] = uv.Cell{Content: "e\u0301", Width: 1, Style: uv.Style{Fg: color.RGBA{1, 2, 3, 255}}, Link: uv.Link{URL: "u"}}
	if _, err := parkGrid(b); err != nil {
		t.Fatal(err)
	}
}

// FuzzParkMatchesLive: arbitrary output, parked after arbitrary pieces,
// reads and continues exactly like a Term that never parks.
func FuzzParkMatchesLive(f *testing.F) {
	f.Add([]byte(strings.Join(tuiStart, "")), uint8(9))
	f.Add(tuiOutput(50), uint8(200))
	f.Add([]byte("\x1b[?1049h\x1b[2J\x1b]8;;x\x07ab\x1b]8;;\x07\x1b[3;2r\x1b[9S日\u0301\x1b[?1049l\x1bc\x1b[5;5H"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		w := newTwins(t, 20, 6)
		n := int(step%64) + 1
		for i := 0; len(data) > 0; i++ {
			k := min(n, len(data))
			w.feed(data[:k])
			data = data[k:]
			w.park()
			w.same(fmt.Sprintf("piece %d", i), i%3 == 0)
			if i%11 == 10 {
				w.a.Resize(20-i%4, 6+i%3)
				w.b.Resize(20-i%4, 6+i%3)
			}
		}
		w.same("end", true)
	})
}
