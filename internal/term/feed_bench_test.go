package term

import (
	"testing"

	"github.com/charmbracelet/x/vt"
)

// BenchmarkFeed measures how fast a Term takes TUI-like output (coloured
// lines that scroll), against the bare emulator as the baseline.
func BenchmarkFeed(b *testing.B) {
	out := tuiOutput(2000)
	b.Run("term", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		t := New(Options{})
		defer t.Close()
		for b.Loop() {
			t.Feed(out)
		}
	})
	b.Run("vt", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		e := vt.NewEmulator(DefaultCols, DefaultRows)
		e.SetScrollbackSize(1000)
		for b.Loop() {
			_, _ = e.Write(out)
		}
	})
}
