package term

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzFeed feeds arbitrary bytes in arbitrary pieces, with samples, clears
// of the sample state and resizes in between: nothing may panic, and what
// the Term keeps stays within its bounds.
func FuzzFeed(f *testing.F) {
	f.Add([]byte("hello\r\nworld\x1b[2J\x1b[?1049hALT\x1b[?1049l\x1b[3J"), uint8(7))
	f.Add([]byte("\x1b[6n\x1b[c\x1b]11;?\x07\x1b[40S\x1b[5M\x1b[H\x1bc日本\u0301\ttab"), uint8(3))
	f.Add([]byte(strings.Repeat("x\n", 300)+"\x1b]0;"+strings.Repeat("t", 20000)), uint8(200))
	f.Add([]byte("\x1b[2;5r\x1b[5;1H"+strings.Repeat("line\n", 50)+"\x1b[r\x1bP+q544e\x1b\\"), uint8(11))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		const cols, rows, sbLines, sbBytes = 20, 6, 50, 600
		var lines int
		tm := New(Options{Cols: cols, Rows: rows, Scrollback: sbLines, ScrollbackBytes: sbBytes,
			OnLines: func(ls []string) {
				for _, l := range ls {
					if l == "" || strings.ContainsAny(l, "\r\n") {
						t.Fatalf("activity line %q", l)
					}
				}
				lines += len(ls)
			}})
		defer tm.Close()
		n := int(step%64) + 1
		for i := 0; len(data) > 0; i++ {
			k := min(n, len(data))
			tm.Feed(data[:k])
			data = data[k:]
			tm.mu.Lock()
			switch i % 4 {
			case 0:
				tm.takeLocked(takeStable)
			case 1:
				tm.takeLocked(takeQuiet)
			}
			a := &tm.act
			_, r := tm.cols, tm.rows
			bad := len(a.open) >= r || len(a.prev) > rows+2 || len(a.ghosts) > maxGhosts ||
				tm.hist.n > sbLines || tm.hist.bytes > sbBytes
			msg := fmt.Sprintf("bounds at %dx%d: open %d prev %d ghosts %d history %d lines %d bytes",
				tm.cols, r, len(a.open), len(a.prev), len(a.ghosts), tm.hist.n, tm.hist.bytes)
			tm.mu.Unlock()
			if bad {
				t.Fatal(msg)
			}
			if i%13 == 12 {
				tm.Resize(cols-i%5, rows+i%3)
			}
		}
		tm.Flush()
		s := tm.Snapshot(SnapshotOptions{Scrollback: 1000, ANSI: true})
		c, r := tm.Size()
		if len(s.Lines) != r || len(s.ANSI) != r || s.Cols != c || len(s.Scrollback) > sbLines {
			t.Fatalf("snapshot %dx%d: %d lines, %d ansi, %d scrollback", c, r, len(s.Lines), len(s.ANSI), len(s.Scrollback))
		}
		for _, l := range s.Lines {
			if strings.ContainsAny(l, "\r\n") {
				t.Fatalf("screen row %q", l)
			}
		}
	})
}

// maxNsPerByte is what feeding may cost on average, per byte of output,
// on the screens FuzzFeedCost uses: well above what text and real
// programs' sequences cost there (under 3 µs), far below one unclamped
// count. fixedCost allows for what a run pays once whatever its length
// (the first switch to the alternate screen allocates its cells).
const (
	maxNsPerByte = 10_000
	fixedCost    = 200 * time.Microsecond
)

// FuzzFeedCost feeds arbitrary bytes to a 40x12 or a 20x6 screen and
// fails, besides on a panic, when they cost more than maxNsPerByte on
// average: a sequence whose count escaped the clamp costs seconds. (A
// sequence that rightly acts on the whole screen costs about 70 ns a cell,
// so the screens are small enough for the bound to hold for any bytes.)
// The time is the least of up to six feeds to fresh Terms, so that a busy
// machine does not fail it; under the race detector only panics count.
// scripts/test fuzzes it with 20,000 inputs (about 20 s).
func FuzzFeedCost(f *testing.F) {
	f.Add([]byte("x\x1b[99999999b"), false)
	f.Add([]byte("\x1b[99999999I\x1b[99999999Z\x1b[99999999X"), true)
	f.Add([]byte("\x1b[99999999@\x1b[99999999P\x1b[99999999L\x1b[99999999M\x1b[99999999S\x1b[99999999T"), false)
	f.Add([]byte("\x9b99999999b\x1b[4294967297b\x1b[?1049h\x1b[99999999;99999999Hz\x1b[2J\x1b#8"), true)
	f.Fuzz(func(t *testing.T, data []byte, small bool) {
		cols, rows := 40, 12
		if small {
			cols, rows = 20, 6
		}
		feed := func() time.Duration { return feedTime(cols, rows, data) }
		took := feed()
		budget := time.Duration(len(data))*maxNsPerByte + fixedCost
		if raceOn || took <= budget {
			return
		}
		// A busy machine can stall any one feed; a sequence that escaped
		// the clamp is slow every time.
		for range 5 {
			if took = min(took, feed()); took <= budget {
				return
			}
		}
		if took > budget {
			t.Fatalf("%d bytes took %v on %dx%d: %.1f µs a byte", len(data), took, cols, rows,
				float64(took.Nanoseconds())/float64(len(data))/1000)
		}
	})
}
