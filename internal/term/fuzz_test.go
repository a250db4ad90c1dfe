package term

import (
	"fmt"
	"strings"
	"testing"
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
