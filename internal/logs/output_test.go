package logs

import (
	"strings"
	"testing"
)

// TestWriteRawAndOutput: a PTY unit's raw bytes reach the ring without
// becoming entries; its lines arrive through Output, attributed to the
// current run, cleaned and cut like Write's.
func TestWriteRawAndOutput(t *testing.T) {
	l := openT(t, t.TempDir(), "u", Options{FileMaxBytes: -1, MaxLineLen: 12})
	l.SetRun(3)
	write := func(s string) {
		if n, err := l.WriteRaw([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("WriteRaw = %d, %v", n, err)
		}
	}
	write("Unable\x1b[9Gto\r\n")
	if es, _ := l.EntriesAfter(0, 0); len(es) != 0 {
		t.Fatalf("WriteRaw made entries: %+v", es)
	}
	if data, _, _ := l.Raw(0, 0); string(data) != "Unable\x1b[9Gto\r\n" {
		t.Fatalf("raw = %q", data)
	}
	l.Output("Unable  to", "   ", "\x1b[31mred\x1b[m  ", "0123456789abcdef日本")
	l.Output("abcdefghij日本") // a cut never splits a character
	l.Flush()                // the raw partial line must not turn into an entry either
	es, _ := l.EntriesAfter(0, 0)
	want := []string{"Unable  to", "red", "0123456789ab", "cdef日本", "abcdefghij", "日本"}
	if got := texts(es); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("entries %q, want %q", got, want)
	}
	for _, e := range es {
		if e.RunID != 3 || e.Kind != KindOutput {
			t.Fatalf("entry %+v", e)
		}
	}
	l.Close()
	l.Output("after close")
	if es2, _ := l.EntriesAfter(0, 0); len(es2) != len(es) {
		t.Fatal("Output after Close added entries")
	}
}
