// Package term keeps a terminal emulator (github.com/charmbracelet/x/vt) per
// PTY unit and derives from it what a reader of the unit wants (docs/design/terminals.md):
// the screen as text or with colours, a bounded scrollback, activity lines
// as the screen shows them, and the busy/idle state.
//
// The PTY reader calls Feed; it never waits for anything but the Term's own
// lock, which readers hold only to copy cells out. The emulator's answers to
// terminal queries are dropped without blocking (see New): the three TUI
// agents this was tried with (Gemini CLI, Codex, Claude Code) start without
// them, and a program attached to a real terminal gets its answers there.
//
// A Term starts no goroutine of its own; its sample and idle timers run only
// while output is being settled, so an idle unit costs no CPU. Nor much
// memory: the emulator is built by a run's first output, and while the
// unit is idle its screens' cells are parked in a compact form (park.go).
// 200 TUI harnesses idle on their dialogs keep the daemon at 54 MiB
// instead of 210 (go run ./bench, part 2b).
package term

import (
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// Defaults for the zero fields of Options.
const (
	DefaultCols            = 120
	DefaultRows            = 40
	DefaultIdleAfter       = 3 * time.Second
	DefaultScrollback      = 1000     // lines
	DefaultScrollbackBytes = 64 << 10 // of text
	DefaultSample          = 100 * time.Millisecond
)

// Size bounds, for config validation and Resize.
const (
	MinCols, MaxCols = 2, 1000
	MinRows, MaxRows = 2, 500
)

// piece is how many bytes the emulator is fed at a time, under the lock,
// on a screen of pieceCells cells or fewer; a larger screen is fed in
// proportionally smaller pieces (at least minPiece bytes), since a
// sequence that scrolls, inserts or clears costs up to a screenful of
// cells: 256 bytes of ED 2 on the largest screen took 2.4 s in one go.
// Lines leaving the screen are collected after each piece, so the
// emulator's own buffer of such lines (capture) never overflows: a piece
// scrolls at most one line per byte plus a screenful per CSI S / CSI M /
// REP (clamped, see clamp), and those drain first.
const (
	piece      = 256
	pieceCells = DefaultCols * DefaultRows
	minPiece   = 8
)

// pieceFor is the piece size on a cols x rows screen.
func pieceFor(cols, rows int) int {
	return max(minPiece, min(piece, piece*pieceCells/(cols*rows)))
}

// Options configure a Term. A zero field takes its default.
type Options struct {
	Cols, Rows      int
	IdleAfter       time.Duration // silence after which the unit is idle
	Scrollback      int           // lines of scrollback kept
	ScrollbackBytes int           // bytes of scrollback text kept
	Sample          time.Duration // how often a changing screen is examined
	Now             func() time.Time

	// OnLines receives activity lines, in order. It is called with the
	// Term's lock held (that is what orders the calls), from Feed's
	// goroutine or a timer's, so it must be cheap, must not block and must
	// not call back into the Term.
	OnLines func(lines []string)
	// OnActivity is told of every busy/idle change, under the same rules
	// as OnLines.
	OnActivity func(Activity)
}

func (o Options) withDefaults() Options {
	if o.Cols <= 0 {
		o.Cols = DefaultCols
	}
	if o.Rows <= 0 {
		o.Rows = DefaultRows
	}
	o.Cols, o.Rows = ClampSize(o.Cols, o.Rows)
	if o.IdleAfter <= 0 {
		o.IdleAfter = DefaultIdleAfter
	}
	if o.Scrollback <= 0 {
		o.Scrollback = DefaultScrollback
	}
	if o.ScrollbackBytes <= 0 {
		o.ScrollbackBytes = DefaultScrollbackBytes
	}
	if o.Sample <= 0 {
		o.Sample = DefaultSample
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnLines == nil {
		o.OnLines = func([]string) {}
	}
	if o.OnActivity == nil {
		o.OnActivity = func(Activity) {}
	}
	return o
}

// ClampSize bounds a size to what a terminal accepts.
func ClampSize(cols, rows int) (int, int) {
	return min(max(cols, MinCols), MaxCols), min(max(rows, MinRows), MaxRows)
}

// Term is the terminal of one unit. All methods are safe for concurrent use.
type Term struct {
	opt Options

	mu        sync.Mutex
	em        *vt.Emulator
	main, alt *vt.Screen
	cols      int
	rows      int
	title     string
	paste     bool // the program asked for bracketed paste
	closed    bool
	fed       bool // output arrived since the emulator was built
	hist      history
	act       activity
	rowBuf    []byte // scratch for row text
	clamp     *clamp // the emulator's input filter
	// shown is what readers that must not wait for the emulator read
	// (list, describe, send): published under mu at every change.
	shown atomic.Pointer[shown]
	// bufs are the cell grids of the main and alternate screens (fields
	// of the emulator's screens); parked holds a screen's grid in compact
	// form while the unit is idle, its grid then a 1x1 placeholder (park.go).
	bufs     [2]**uv.RenderBuffer
	parked   [2]*parkedScreen
	noParked bool // tests: a twin that never parks
	noClamp  bool // tests: a twin fed without the clamp
	// captureParked: the screens' capture buffers are dropped while parked.
	captureParked bool

	// outNext is closed by the next output (Output); nil until asked for.
	outNext chan struct{}

	// busy/idle, see idle.go
	busy        bool
	since       time.Time // busy: when output resumed; idle: the last output
	lastOut     time.Time
	dirty       bool // output arrived since the last sample
	idleTimer   *time.Timer
	sampleTimer *time.Timer
}

// New returns the terminal of a unit that has not started: an empty screen
// of the configured size, idle since now.
func New(opt Options) *Term {
	opt = opt.withDefaults()
	t := &Term{opt: opt, clamp: newClamp()}
	t.hist = history{maxLines: opt.Scrollback, maxBytes: opt.ScrollbackBytes}
	t.resetLocked(opt.Cols, opt.Rows)
	t.publishLocked()
	return t
}

// shown is the part of a Term's state that is read without its lock.
type shown struct {
	act        Activity
	cols, rows int
	paste      bool
}

// publishLocked makes the current activity, size and paste mode visible to
// the lock-free readers.
func (t *Term) publishLocked() {
	n := shown{act: t.activityLocked(), cols: t.cols, rows: t.rows, paste: t.paste}
	if old := t.shown.Load(); old == nil || *old != n {
		t.shown.Store(&n)
	}
}

// Reset starts a new run on a fresh screen of cols x rows (0 keeps the
// configured size): the old emulator, with its modes and half-read
// sequences, is dropped; the scrollback stays. Lines the old screen still
// held should have been taken by Flush first.
func (t *Term) Reset(cols, rows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if cols <= 0 {
		cols = t.opt.Cols
	}
	if rows <= 0 {
		rows = t.opt.Rows
	}
	t.resetLocked(cols, rows) // the new run is silent since it started
	if t.busy {
		t.busy = false
		t.opt.OnActivity(t.activityLocked())
	}
	t.publishLocked()
}

// resetLocked forgets the screen state: a blank screen of cols x rows. The
// emulator is built by the first output (emulatorLocked): building one
// allocates about 5 MB (x/vt sizes its parser buffer and both screens
// up front), which a fleet of units that have not printed yet, or never
// print, need not pay.
func (t *Term) resetLocked(cols, rows int) {
	cols, rows = ClampSize(cols, rows)
	t.cols, t.rows = cols, rows
	t.em, t.main, t.alt = nil, nil, nil
	t.clamp.reset()
	t.bufs = [2]**uv.RenderBuffer{}
	t.parked, t.captureParked = [2]*parkedScreen{}, false
	t.title, t.paste, t.fed = "", false, false
	t.act.reset()
	now := t.opt.Now()
	t.since, t.lastOut, t.dirty = now, now, false
}

// emulatorLocked builds the emulator of this run if it has none yet.
func (t *Term) emulatorLocked() {
	if t.em != nil {
		return
	}
	cols, rows := t.cols, t.rows
	t.em = vt.NewEmulator(cols, rows)
	var ok bool
	t.main, t.alt, ok = screens(t.em)
	if !ok {
		panic("term: x/vt's Emulator no longer has the scrs [2]Screen field this package reads; see screens()")
	}
	t.bufs = [2]**uv.RenderBuffer{bufOf(t.main), bufOf(t.alt)}
	if t.bufs[0] == nil || t.bufs[1] == nil {
		panic("term: x/vt's Screen no longer has the buf field this package reads; see bufOf()")
	}
	t.shrinkAltLocked()
	if p := parserOf(t.em); p != nil {
		p.SetDataSize(maxStringData)
	} else {
		panic("term: x/vt's Emulator no longer has the parser field this package reads; see parserOf()")
	}
	// Nobody reads the emulator's answers to queries (DA, CPR, colours,
	// DECRQM...). It writes them to an unbuffered io.Pipe, where a write
	// waits for a reader; with the pipe closed every such write returns
	// io.ErrClosedPipe at once, so Feed can never stall on one.
	if c, ok := t.em.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	t.setCaptureLocked()
	t.em.SetCallbacks(vt.Callbacks{
		Title:     func(s string) { t.title = s },
		AltScreen: t.onAltScreenLocked,
		EnableMode: func(m ansi.Mode) {
			if m == ansi.ModeBracketedPaste {
				t.paste = true
			}
		},
		DisableMode: func(m ansi.Mode) {
			if m == ansi.ModeBracketedPaste {
				t.paste = false
			}
		},
	})
	t.registerHandlersLocked()
}

// setCaptureLocked gives both screens a small buffer for lines that leave them;
// drain empties it after every piece. The emulator's default keeps 10000
// lines of cells per screen, the alternate one out of reach of its API.
func (t *Term) setCaptureLocked() {
	n := piece + 2*t.rows
	t.main.SetScrollback(vt.NewScrollback(n))
	t.alt.SetScrollback(vt.NewScrollback(n))
}

// screens returns the emulator's main and alternate screens. x/vt v0.1.0
// exports the Screen type but reaches only the active one through the
// Emulator; the alternate screen's scrollback would otherwise grow to
// 10000 lines of cells with nobody able to read or bound it. The version is
// pinned in go.mod and TestScreensReachable fails if the field moves.
func screens(e *vt.Emulator) (main, alt *vt.Screen, ok bool) {
	v := reflect.ValueOf(e).Elem().FieldByName("scrs")
	if !v.IsValid() || v.Kind() != reflect.Array || v.Len() != 2 || v.Type().Elem() != reflect.TypeFor[vt.Screen]() {
		return nil, nil, false
	}
	main = (*vt.Screen)(unsafe.Pointer(v.Index(0).UnsafeAddr()))
	alt = (*vt.Screen)(unsafe.Pointer(v.Index(1).UnsafeAddr()))
	return main, alt, true
}

// bufOf returns the address of a screen's cell buffer, which x/vt v0.1.0
// does not export; TestScreensReachable fails if the field moves.
func bufOf(s *vt.Screen) **uv.RenderBuffer {
	v := reflect.ValueOf(s).Elem().FieldByName("buf")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*uv.RenderBuffer]() {
		return nil
	}
	return (**uv.RenderBuffer)(unsafe.Pointer(v.UnsafeAddr()))
}

// shrinkAltLocked gives the alternate screen a 1x1 buffer while the program
// does not use it: its cells are half of what an emulator costs (x/vt
// allocates both screens in full, and shrinking a buffer keeps its
// arrays). onAltScreenLocked grows it back when the program switches.
func (t *Term) shrinkAltLocked() {
	*t.bufs[1] = uv.NewRenderBuffer(1, 1)
	t.alt.Resize(1, 1) // the scroll region follows the buffer
}

// maxStringData bounds the body of one OSC/DCS/APC string the parser
// keeps (a title, a hyperlink, a working directory); a longer one is cut.
// x/vt allocates 4 MiB for it up front, per emulator, for images and
// clipboard copies nobody here reads.
const maxStringData = 8 << 10

// parserOf returns the emulator's escape-sequence parser, which x/vt v0.1.0
// does not export; TestScreensReachable fails if the field moves.
func parserOf(e *vt.Emulator) *ansi.Parser {
	v := reflect.ValueOf(e).Elem().FieldByName("parser")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*ansi.Parser]() {
		return nil
	}
	return *(**ansi.Parser)(unsafe.Pointer(v.UnsafeAddr()))
}

// registerHandlersLocked adds observers in front of the emulator's own handlers
// (the last registered runs first; false passes the sequence on).
func (t *Term) registerHandlersLocked() {
	// Scrolls that move up to a screenful at once: collect what left so
	// far, so the capture buffer holds at most one of them.
	drainFirst := func(ansi.Params) bool { t.drainLocked(); return false }
	t.em.RegisterCsiHandler('S', drainFirst)
	t.em.RegisterCsiHandler('M', drainFirst)
	t.em.RegisterCsiHandler('b', drainFirst) // REP scrolls up to a screenful (clamp)
	// Erase display 2 and 3 are done here: the emulator's ED 2 would push
	// the rows into scrollback as if they had scrolled, and ED 3 would drop
	// them unseen; activity needs to tell a clear from a scroll.
	t.em.RegisterCsiHandler('J', func(params ansi.Params) bool {
		n, _, _ := params.Param(0, 0)
		if n != 2 && n != 3 {
			return false
		}
		t.drainLocked()
		scr := t.activeLocked()
		t.clearedLocked(scr, n == 2 && scr == t.main)
		if n == 3 {
			t.hist.clear()
		}
		scr.Clear()
		return true
	})
	// RIS resets both screens and every mode without telling callbacks.
	t.em.RegisterEscHandler('c', func() bool {
		t.drainLocked()
		t.clearedLocked(t.activeLocked(), false)
		t.paste = false
		return false
	})
}

// activeLocked returns the screen the program draws on; nil before the
// run's first output.
func (t *Term) activeLocked() *vt.Screen {
	if t.em == nil {
		return nil
	}
	if t.em.IsAltScreen() {
		return t.alt
	}
	return t.main
}

// onAltScreenLocked runs inside the emulator when the program switches
// screens. Entering, everything the main screen shows is taken (the
// program moved on to a full-screen view; the main screen stays as it is
// and resumes later). Leaving, what the alternate screen showed is gone.
func (t *Term) onAltScreenLocked(on bool) {
	t.drainLocked()
	if on {
		t.takeScreenLocked(t.main, takeAll)
		t.act.enterAlt()
		t.alt.Resize(t.cols, t.rows) // cleared and homed by the emulator already
		return
	}
	t.clearedLocked(t.alt, false)
	t.act.leaveAlt()
	t.shrinkAltLocked()
}

// Feed takes output of the current run. It never blocks on anything but the
// Term's lock, and holds that for one piece at a time: a reader (a screen,
// a send, a viewer joining) waits for at most one piece, whatever the
// program prints. Control sequences are clamped to the screen first (see
// clamp), so no piece costs more than a few screenfuls of cells.
func (t *Term) Feed(p []byte) {
	for len(p) > 0 {
		n := t.feedPiece(p)
		if n == 0 {
			return
		}
		p = p[n:]
	}
}

// feedPiece feeds the first piece of p under the lock and says how many
// bytes it took; 0 once closed.
func (t *Term) feedPiece(p []byte) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0
	}
	t.emulatorLocked()
	t.liveLocked()
	n := min(len(p), pieceFor(t.cols, t.rows))
	q := p[:n]
	if !t.noClamp {
		q = t.clamp.filter(q, t.cols, t.rows)
	}
	_, _ = t.em.Write(q) // fails only after Close, which we never call
	if title, ok := t.clamp.takeTitle(); ok {
		t.title = title // as written, not as the emulator was given it (utf8.go)
	}
	t.drainLocked()
	t.fed = true
	t.outputLocked()
	t.publishLocked()
	if t.outNext != nil {
		close(t.outNext)
		t.outNext = nil
	}
	return n
}

// Output returns a channel closed when the program next prints (Feed): a
// send that must know the program drew what it typed takes it before
// typing.
func (t *Term) Output() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.outNext == nil {
		t.outNext = make(chan struct{})
	}
	return t.outNext
}

// drainLocked collects the lines that left either screen since the last drain.
func (t *Term) drainLocked() {
	if t.em == nil {
		return
	}
	t.drainScreenLocked(t.main, true)
	t.drainScreenLocked(t.alt, false)
}

func (t *Term) drainScreenLocked(scr *vt.Screen, main bool) {
	sb := scr.Scrollback()
	if sb == nil || sb.Len() == 0 {
		return
	}
	lines := sb.Lines()
	for _, l := range lines {
		s := t.lineTextLocked(l)
		if main {
			t.hist.push(s)
		}
		t.act.left(s, t.rows, t.opt.OnLines)
	}
	clear(lines) // the emptied buffer must not pin the cells
	sb.Clear()
}

// clearedLocked hands the non-blank rows of scr, which are about to vanish, to
// activity (and to the scrollback when keep is set).
func (t *Term) clearedLocked(scr *vt.Screen, keep bool) {
	rows := t.rowTextsLocked(scr)
	if keep {
		for _, s := range rows {
			if s != "" {
				t.hist.push(s)
			}
		}
	}
	t.act.cleared(rows, t.opt.OnLines)
}

// Resize follows a change of the PTY size. Everything on the screen that
// is not yet an activity line is taken first: a narrower screen cuts rows.
func (t *Term) Resize(cols, rows int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	cols, rows = ClampSize(cols, rows)
	if cols == t.cols && rows == t.rows {
		return
	}
	t.takeLocked(takeAll)
	t.cols, t.rows = cols, rows
	defer t.publishLocked()
	t.act.resized()
	if t.em == nil {
		return // the emulator is built at this size
	}
	t.liveLocked()
	t.em.Resize(cols, rows) // both screens
	if !t.em.IsAltScreen() {
		t.shrinkAltLocked()
	}
	t.setCaptureLocked()
	if !t.busy {
		t.parkLocked()
	}
}

// Size returns the current screen size. It does not wait for output being
// fed.
func (t *Term) Size() (cols, rows int) {
	s := t.shown.Load()
	return s.cols, s.rows
}

// BracketedPaste reports whether the program asked for bracketed paste
// (DECSET 2004), so input can be wrapped as it expects. It does not wait
// for output being fed.
func (t *Term) BracketedPaste() bool {
	return t.shown.Load().paste
}

// Flush turns everything the screen shows that is not an activity line yet
// into lines, the cursor's row included: the run ended.
func (t *Term) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.drainLocked()
	t.takeLocked(takeAll)
	t.parkLocked() // the run ended: nothing writes to the screen until the next
}

// Close stops the timers; later calls do nothing. Snapshot keeps working.
func (t *Term) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.busy = false // no timer will say so; WaitIdle goes by the silence
	t.publishLocked()
	for _, tm := range []*time.Timer{t.idleTimer, t.sampleTimer} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.idleTimer, t.sampleTimer = nil, nil
	t.parkLocked()
}

// String describes the Term for logs.
func (t *Term) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("term %dx%d alt=%v", t.cols, t.rows, t.em != nil && t.em.IsAltScreen())
}
