package logs

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriterAndReaders runs one writer against followers of the
// entries and of the raw ring. Readers check what they see is consistent:
// ids strictly increase, raw bytes at an offset are the bytes written there.
func TestConcurrentWriterAndReaders(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{RingSize: 1024, MaxEntries: 100, FileMaxBytes: 4096})
	var sb strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&sb, "\x1b[32mline\x1b[0m %d\r\n", i)
	}
	stream := []byte(sb.String())

	var wg sync.WaitGroup
	wg.Go(func() {
		l.SetRun(1)
		rest := stream
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), 1+i%37) // chunks split lines and sequences anywhere
			if _, err := l.Write(rest[:n]); err != nil {
				t.Error(err)
				return
			}
			rest = rest[n:]
			if i%500 == 0 {
				l.Event(1, fmt.Sprintf("tick %d", i))
			}
		}
		l.Event(1, "done")
	})
	for range 2 {
		wg.Go(func() {
			var cursor uint64
			for {
				ch := l.Changed()
				es, oldest := l.EntriesAfter(cursor, 0)
				if len(es) > 0 && oldest > es[0].ID {
					t.Errorf("oldest %d above returned %d", oldest, es[0].ID)
					return
				}
				for _, e := range es {
					if e.ID <= cursor {
						t.Errorf("id %d not above cursor %d", e.ID, cursor)
						return
					}
					// Events flush partial lines, so output may be a piece of a line.
					if e.Kind == KindOutput && strings.Trim(e.Text, "line 0123456789") != "" {
						t.Errorf("unexpected output entry %q", e.Text)
						return
					}
					cursor = e.ID
					if e.Kind == KindEvent && e.Text == "done" {
						return
					}
				}
				<-ch
			}
		})
	}
	wg.Go(func() {
		var from int64
		for from < int64(len(stream)) {
			ch := l.Changed()
			data, start, end := l.Raw(from, 100)
			if end-start > 1024 || start < 0 || end > int64(len(stream)) {
				t.Errorf("window [%d,%d)", start, end)
				return
			}
			from = max(from, start)
			if !bytes.Equal(data, stream[from:from+int64(len(data))]) {
				t.Errorf("Raw(%d) = %q, want %q", from, data, stream[from:from+int64(len(data))])
				return
			}
			from += int64(len(data))
			if len(data) == 0 {
				<-ch
			}
		}
	})
	wg.Wait()
	if got := l.Tail(2); len(got) != 2 || got[0].Text != "line 2999" || got[1].Text != "done" {
		t.Fatalf("tail %+v", got)
	}
}
