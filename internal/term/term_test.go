package term

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/charmbracelet/x/vt"
)

// recorder collects what a Term reports.
type recorder struct {
	mu    sync.Mutex
	lines []string
	acts  []State
}

func (r *recorder) onLines(ls []string) {
	r.mu.Lock()
	r.lines = append(r.lines, ls...)
	r.mu.Unlock()
}

func (r *recorder) onActivity(a Activity) {
	r.mu.Lock()
	r.acts = append(r.acts, a.State)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

func (r *recorder) states() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acts)
}

func newTerm(t *testing.T, opt Options) (*Term, *recorder) {
	t.Helper()
	r := &recorder{}
	opt.OnLines, opt.OnActivity = r.onLines, r.onActivity
	tm := New(opt)
	t.Cleanup(tm.Close)
	return tm, r
}

func feed(tm *Term, s string) { tm.Feed([]byte(s)) }

// settle lets a fake clock run past every sample.
func settle() {
	time.Sleep(time.Second)
	synctest.Wait()
}

func wantLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("activity lines:\n got %q\nwant %q", got, want)
	}
}

func row(tm *Term, y int) string { return tm.Snapshot(SnapshotOptions{}).Lines[y] }

func TestScreensReachable(t *testing.T) {
	e := vt.NewEmulator(10, 3)
	main, alt, ok := screens(e)
	if !ok || main == alt {
		t.Fatal("x/vt's screens cannot be reached: update screens() for this version")
	}
	_, _ = e.WriteString("hi\x1b[?1049hALT")
	if c := alt.CellAt(0, 0); c == nil || c.Content != "A" {
		t.Fatalf("alternate screen cell = %+v", c)
	}
	if c := main.CellAt(0, 0); c == nil || c.Content != "h" {
		t.Fatalf("main screen cell = %+v", c)
	}
	if bufOf(alt) == nil || *bufOf(alt) == nil {
		t.Fatal("x/vt's screen buffer cannot be reached: update bufOf() for this version")
	}
	if parserOf(e) == nil {
		t.Fatal("x/vt's parser cannot be reached: update parserOf() for this version")
	}
}

func TestCursorForwardKeepsSpaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 80, Rows: 10})
		// Claude Code's offline error, byte for byte: words placed with CHA.
		feed(tm, "\x1b[2G\x1b[38;5;211mUnable\x1b[9Gto\x1b[12Gconnect\x1b[20Gto\x1b[23GAnthropic\x1b[33Gservices\x1b[39m\r\r\n")
		// and with CUF
		feed(tm, "a\x1b[3Cb\tc\r\n")
		settle()
		if got := row(tm, 0); got != " Unable to connect to Anthropic services" {
			t.Fatalf("row 0 = %q", got)
		}
		wantLines(t, r.got(), []string{" Unable to connect to Anthropic services", "a   b   c"})
	})
}

func TestCRProgressLandsOnceWithFinalText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{})
		feed(tm, "downloading\r\n")
		for i := 0; i <= 100; i += 10 {
			// Slower than a sample: output settles between updates.
			feed(tm, fmt.Sprintf("\r[%-10s] %3d%%", strings.Repeat("#", i/10), i))
			time.Sleep(300 * time.Millisecond)
		}
		feed(tm, "\r\ndone\r\n")
		settle()
		wantLines(t, r.got(), []string{"downloading", "[##########] 100%", "done"})
	})
}

func TestProgressOnCursorRowLandsAtIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{IdleAfter: 3 * time.Second})
		feed(tm, "step 1\r\n")
		feed(tm, "working 1/3")
		time.Sleep(time.Second)
		feed(tm, "\rworking 3/3")
		settle()
		wantLines(t, r.got(), []string{"step 1"})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		wantLines(t, r.got(), []string{"step 1", "working 3/3"})
	})
}

// TestHiddenCursorRowIsNotHeldBack: a menu that parks its hidden cursor
// on the selected item (Claude Code) has that item taken with the rest.
func TestHiddenCursorRowIsNotHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 40, Rows: 10})
		feed(tm, "\x1b[?25lChoose\r\n❯ Dark\r\n  Light\r\n\x1b[2;1H")
		settle()
		wantLines(t, r.got(), []string{"Choose", "❯ Dark", "  Light"})
	})
}

func TestWideAndCombiningCharacters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 20, Rows: 5})
		feed(tm, "日本語 e\u0301 ok\r\n")
		feed(tm, "👍🏽x\r\n")
		settle()
		if got := row(tm, 0); got != "日本語 e\u0301 ok" {
			t.Fatalf("row 0 = %q", got)
		}
		wantLines(t, r.got(), []string{"日本語 e\u0301 ok", "👍🏽x"})
	})
}

func TestAltScreenRedrawsAddNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 40, Rows: 10})
		feed(tm, "$ tui\r\n")
		feed(tm, "\x1b[?1049h\x1b[?25l")
		frame := func(sel int) string {
			var b strings.Builder
			b.WriteString("\x1b[H\x1b[2J")
			b.WriteString("\x1b[2;3HChoose one")
			for i, s := range []string{"Alpha", "Beta"} {
				mark := " "
				if i == sel {
					mark = ">"
				}
				fmt.Fprintf(&b, "\x1b[%d;3H%s %d. %s", 4+i, mark, i+1, s)
			}
			return b.String()
		}
		for range 50 { // the same frame, many times a second
			feed(tm, frame(0))
			time.Sleep(20 * time.Millisecond)
		}
		settle()
		if s := tm.Snapshot(SnapshotOptions{}); !s.AltScreen || s.Lines[1] != "  Choose one" || s.Cursor.Visible {
			t.Fatalf("snapshot %+v", s)
		}
		feed(tm, frame(1))
		settle()
		feed(tm, "\x1b[?1049l\x1b[?25hbye\r\n")
		settle()
		wantLines(t, r.got(), []string{"$ tui", "  Choose one", "  > 1. Alpha", "    2. Beta",
			"    1. Alpha", "  > 2. Beta", "bye"})
		if s := tm.Snapshot(SnapshotOptions{}); s.AltScreen || s.Lines[0] != "$ tui" || s.Lines[1] != "bye" {
			t.Fatalf("after leaving alt: %+v", s)
		}
	})
}

// TestInkStyleRedraw: an ink program erases its previous frame line by
// line and writes the next one; a frame that grows by a line adds that
// line, a repeated frame adds nothing, a spinner adds only its last state.
func TestInkStyleRedraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 60, Rows: 20})
		prev := 0
		draw := func(lines ...string) {
			var b strings.Builder
			for range prev {
				b.WriteString("\x1b[2K\x1b[1A")
			}
			b.WriteString("\x1b[2K\x1b[G")
			for _, l := range lines {
				b.WriteString(l + "\n")
			}
			prev = len(lines)
			feed(tm, strings.ReplaceAll(b.String(), "\n", "\r\n"))
		}
		for range 10 {
			draw("╭──────╮", "│ Hi   │", "╰──────╯")
			time.Sleep(50 * time.Millisecond)
		}
		settle()
		spin := []string{"⠋", "⠙", "⠹", "⠸"}
		for i := range 40 {
			draw("╭──────╮", "│ Hi   │", "╰──────╯", spin[i%4]+" Thinking")
			time.Sleep(80 * time.Millisecond)
		}
		draw("╭──────╮", "│ Hi   │", "╰──────╯", "✓ Done")
		settle()
		wantLines(t, r.got(), []string{"╭──────╮", "│ Hi   │", "╰──────╯", "✓ Done"})
	})
}

// TestClearAndRedrawAddsNothing: Gemini CLI clears the screen and draws the
// same dialog again.
func TestClearAndRedrawAddsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 60, Rows: 20})
		dialog := "Do you trust this folder?\r\n● 1. Trust folder\r\n  2. Don't trust\r\n"
		for range 5 {
			feed(tm, "\x1b[2J\x1b[3J\x1b[H"+dialog)
			time.Sleep(500 * time.Millisecond)
		}
		settle()
		wantLines(t, r.got(), []string{"Do you trust this folder?", "● 1. Trust folder", "  2. Don't trust"})
		if s := tm.Snapshot(SnapshotOptions{Scrollback: 10}); len(s.Scrollback) != 0 {
			t.Fatalf("ED 3 should have emptied the scrollback: %q", s.Scrollback)
		}
	})
}

// TestRedrawCaughtHalfDrawn: a sample that lands between the clear and the
// rest of the frame must not make the redrawn rows new.
func TestRedrawCaughtHalfDrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 40, Rows: 10})
		feed(tm, "\x1b[?25l")
		// Timed off the 100ms sample ticks, so that the order is certain.
		for range 8 {
			feed(tm, "\x1b[H\x1b[2J\x1b[2;3HSign in")
			time.Sleep(140 * time.Millisecond) // a sample sees only the title
			feed(tm, "\x1b[4;3H> 1. With ChatGPT")
			time.Sleep(140 * time.Millisecond)
			feed(tm, "\x1b[5;3H  2. With a key")
			time.Sleep(70 * time.Millisecond)
		}
		settle()
		wantLines(t, r.got(), []string{"  Sign in", "  > 1. With ChatGPT", "    2. With a key"})
	})
}

func TestEchoLoopOneLinePerLineInOrderPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 80, Rows: 24})
		var want []string
		for i := range 200 {
			s := fmt.Sprintf("line %d", i)
			if i%7 == 0 {
				s = "same" // repeated lines count once per line
			}
			want = append(want, s)
			feed(tm, s+"\r\n")
			time.Sleep(30 * time.Millisecond) // never settles
			// Promptly: every line older than 0.5s is in.
			if lag := 500 * time.Millisecond / (30 * time.Millisecond); i > int(lag) {
				synctest.Wait()
				if got := r.got(); len(got) < i-int(lag) {
					t.Fatalf("after line %d only %d lines are in", i, len(got))
				}
			}
		}
		settle()
		wantLines(t, r.got(), want)
	})
}

func TestFloodScrollsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 80, Rows: 24, Scrollback: 100})
		var b strings.Builder
		var want []string
		for i := range 5000 {
			s := fmt.Sprintf("n%d", i)
			want = append(want, s)
			b.WriteString(s + "\r\n")
		}
		feed(tm, b.String())
		settle()
		wantLines(t, r.got(), want)
		s := tm.Snapshot(SnapshotOptions{Scrollback: 1000})
		if len(s.Scrollback) != 100 || s.Scrollback[99] != "n4976" {
			t.Fatalf("scrollback %d lines, last %q", len(s.Scrollback), s.Scrollback[len(s.Scrollback)-1])
		}
	})
}

func TestBusyIdleTransitionsAndWaitIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{IdleAfter: 3 * time.Second})
		start := time.Now()
		if a := tm.Activity(); a.State != Idle || !a.Since.Equal(start) {
			t.Fatalf("fresh term: %+v", a)
		}
		for range 10 {
			feed(tm, "tick\r\n")
			time.Sleep(time.Second)
		}
		lastOut := time.Now().Add(-time.Second)
		if a := tm.Activity(); a.State != Busy || !a.Since.Equal(start) {
			t.Fatalf("while printing: %+v", a)
		}
		// wait --idle 5s returns 5s after the last output.
		a, err := tm.WaitIdle(context.Background(), 5*time.Second)
		if err != nil || a.State != Idle || !a.Since.Equal(lastOut) || time.Since(lastOut) != 5*time.Second {
			t.Fatalf("WaitIdle = %+v, %v after %v of silence", a, err, time.Since(lastOut))
		}
		if got := r.states(); !slices.Equal(got, []State{Busy, Idle}) {
			t.Fatalf("activity changes %v", got)
		}
		// A unit that keeps printing times out.
		stop := make(chan struct{})
		defer func() { close(stop); synctest.Wait() }()
		feed(tm, "again\r\n")
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
					feed(tm, "more\r\n")
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if a, err := tm.WaitIdle(ctx, 2*time.Second); !errors.Is(err, context.DeadlineExceeded) || a.State != Busy {
			t.Fatalf("WaitIdle on a chatty unit = %+v, %v", a, err)
		}
	})
}

func TestQueriesNeverBlockFeed(t *testing.T) {
	tm, _ := newTerm(t, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		q := strings.Repeat("\x1b[6n\x1b[c\x1b[>c\x1b]11;?\x07\x1b[?2004$p\x1b[5n", 2000)
		tm.Feed([]byte(q))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Feed blocked on the emulator's answers")
	}
}

func TestSnapshotANSIAndRepaint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, _ := newTerm(t, Options{Cols: 30, Rows: 6})
		feed(tm, "\x1b]0;my title\x07plain \x1b[1;31mred bold\x1b[m end\r\n\x1b[44m blue bg \x1b[m\r\nx\x1b[3;10H")
		s := tm.Snapshot(SnapshotOptions{ANSI: true})
		if s.Title != "my title" || s.Lines[0] != "plain red bold end" || s.Lines[1] != " blue bg" ||
			s.Cursor != (Cursor{Row: 2, Col: 9, Visible: true}) || s.Cols != 30 || s.Rows != 6 {
			t.Fatalf("snapshot %+v", s)
		}
		if !strings.Contains(s.ANSI[0], "\x1b[31;1m") || !strings.Contains(s.ANSI[1], "\x1b[44m") {
			t.Fatalf("ANSI rows lost their colours: %q", s.ANSI[:2])
		}
		// A late viewer repainted from the snapshot sees the same screen.
		viewer, _ := newTerm(t, Options{Cols: 30, Rows: 6})
		feed(viewer, "garbage that the repaint must clear\r\n")
		feed(viewer, s.Repaint())
		v := viewer.Snapshot(SnapshotOptions{ANSI: true})
		if !slices.Equal(v.Lines, s.Lines) || v.Cursor != s.Cursor || !slices.Equal(v.ANSI, s.ANSI) {
			t.Fatalf("repainted screen differs:\n%q %+v\n%q %+v", v.Lines, v.Cursor, s.Lines, s.Cursor)
		}
	})
}

func TestResizeFollowsAndTakesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 20, Rows: 5})
		feed(tm, "a long line here\r\n> ")
		tm.Resize(10, 3)
		if c, rw := tm.Size(); c != 10 || rw != 3 {
			t.Fatalf("size %dx%d", c, rw)
		}
		wantLines(t, r.got(), []string{"a long line here", ">"})
		feed(tm, "\x1b[H\x1b[2Jabcdefghijklmn")
		s := tm.Snapshot(SnapshotOptions{})
		if len(s.Lines) != 3 || s.Lines[0] != "abcdefghij" || s.Lines[1] != "klmn" {
			t.Fatalf("after resize %q", s.Lines)
		}
		settle()
	})
}

func TestResetStartsAFreshScreen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, r := newTerm(t, Options{Cols: 20, Rows: 5})
		feed(tm, "\x1b[?2004hold run\r\n\x1b[?1049h")
		if !tm.BracketedPaste() {
			t.Fatal("bracketed paste not seen")
		}
		tm.Flush()
		tm.Reset(0, 0)
		s := tm.Snapshot(SnapshotOptions{Scrollback: 5})
		if s.AltScreen || s.Lines[0] != "" || tm.BracketedPaste() || tm.Activity().State != Idle {
			t.Fatalf("after reset: %+v paste=%v", s, tm.BracketedPaste())
		}
		wantLines(t, r.got(), []string{"old run"})
		settle()
	})
}
