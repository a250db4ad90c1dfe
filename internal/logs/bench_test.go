package logs

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkWrite measures the PTY reader's cost per 4 KiB chunk of typical
// coloured output, with and without the mirror file.
func BenchmarkWrite(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 4096; i++ {
		fmt.Fprintf(&sb, "\x1b[36m%05d\x1b[0m compiling package %d of the build, all is well\r\n", i, i)
	}
	chunk := []byte(sb.String()[:4096])
	for _, file := range []int64{-1, 0} {
		b.Run(fmt.Sprintf("file=%v", file >= 0), func(b *testing.B) {
			l, err := Open(b.TempDir(), "bench", Options{FileMaxBytes: file})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if _, err := l.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
