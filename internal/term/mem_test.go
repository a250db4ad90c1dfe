package term

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// rssBytes is the resident set of this process.
func rssBytes(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// tuiOutput is a screenful of coloured TUI output followed by enough
// scrolling to fill the scrollback.
func tuiOutput(scrollLines int) []byte {
	var b strings.Builder
	for i := range scrollLines {
		fmt.Fprintf(&b, "\x1b[38;5;%dm%5d\x1b[m %s\r\n", i%256, i, strings.Repeat("word ", 18))
	}
	b.WriteString("\x1b[H\x1b[2J")
	for y := range 40 {
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[1;3%dm│\x1b[m row %d %s\x1b[44m│\x1b[m", y+1, y%8, y, strings.Repeat("x", 100))
	}
	return []byte(b.String())
}

// BenchmarkTermMemory reports what one Term costs at 120x40 with a full
// scrollback (1000 lines, 64 KiB): heap bytes (after GC) and resident
// bytes per Term, over n Terms kept alive at once; "alt" with the
// program on its alternate screen. Each Term is measured live, then with
// its grids parked (as an idle unit's are): parked/live is the ratio of
// the two heaps in the same run. It is the number behind the fleet's RSS
// budget; run with -benchtime=1x.
func BenchmarkTermMemory(b *testing.B) {
	for _, alt := range []bool{false, true} {
		b.Run(fmt.Sprintf("alt=%v", alt), func(b *testing.B) {
			const n = 40
			out := tuiOutput(1200)
			for range b.N {
				heap0, rss0 := heapBytes(), rssBytes(b)
				terms := make([]*Term, n)
				for i := range terms {
					terms[i] = New(Options{})
					terms[i].mu.Lock()
					terms[i].noParked = true
					terms[i].liveLocked()
					terms[i].mu.Unlock()
					terms[i].Feed(out)
					if alt {
						terms[i].Feed([]byte("\x1b[?1049h"))
						terms[i].Feed(out[len(out)-8000:])
					}
					terms[i].Flush()
				}
				heap1, rss1 := heapBytes(), rssBytes(b)
				b.ReportMetric(float64(heap1-heap0)/n, "heap-B/term")
				b.ReportMetric(float64(rss1-rss0)/n, "rss-B/term")
				before := terms[0].Snapshot(SnapshotOptions{Scrollback: 5000, ANSI: true})
				for _, t := range terms {
					t.mu.Lock()
					t.noParked = false
					t.parkLocked()
					if t.parked[0] == nil || alt && t.parked[1] == nil {
						b.Fatal("not parked")
					}
					t.mu.Unlock()
				}
				heap2 := heapBytes()
				b.ReportMetric(float64(heap2-heap0)/n, "parked-heap-B/term")
				b.ReportMetric(float64(heap2-heap0)/float64(heap1-heap0), "parked/live")
				after := terms[0].Snapshot(SnapshotOptions{Scrollback: 5000, ANSI: true})
				if len(before.Scrollback) == 0 || fmt.Sprint(before) != fmt.Sprint(after) {
					b.Fatal("the parked screen reads differently")
				}
				for _, t := range terms {
					t.Close()
				}
				runtime.KeepAlive(terms)
			}
		})
	}
}
