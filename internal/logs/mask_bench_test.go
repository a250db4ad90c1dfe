package logs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/mask"
)

// chattyLines is an agent's activity stream as its terminal hands it to
// Output: build and test output, code being read, tool calls, with a
// credential every 50th line.
func chattyLines(n int) []string {
	out := make([]string, n)
	for i := range out {
		switch {
		case i%50 == 49:
			out[i] = "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345"
		case i%4 == 0:
			out[i] = fmt.Sprintf("ok  \tgithub.com/acme/service/internal/pkg%d\t%d.%03ds", i%17, i%9, i%1000)
		case i%4 == 1:
			out[i] = fmt.Sprintf("    func (s *Server) handle%d(ctx context.Context, req *Request) (*Response, error) {", i)
		case i%4 == 2:
			out[i] = fmt.Sprintf("● Read(src/components/Button%d.tsx) ⎿ Read %d lines (ctrl+r to expand)", i, 40+i%300)
		default:
			out[i] = fmt.Sprintf("  %d | const [state, dispatch] = useReducer(reducer, initialState); // the bearer of state", i)
		}
	}
	return out
}

// BenchmarkActivityMask is the masker's added cost on the activity path:
// Output of a chatty stream, one entry per line, without a
// masker (the baseline) and with the daemon's masker holding 64 env_file
// values. ns/op is per entry; MB/s is over the lines' bytes.
func BenchmarkActivityMask(b *testing.B) {
	lines := chattyLines(4096)
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	secrets := make([]string, 64)
	for i := range secrets {
		secrets[i] = fmt.Sprintf("value-%02d-%x", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	for _, tc := range []struct {
		name string
		mask func(string) string
	}{{"baseline", nil}, {"masked", mask.New(secrets...).Func()}} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := Open(b.TempDir(), "bench", Options{FileMaxBytes: -1, Mask: tc.mask})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size / len(lines)))
			i := 0
			for b.Loop() {
				l.Output(lines[i%len(lines)])
				i++
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkActivityMaskInterleaved measures the same two logs in
// alternating blocks of 4096 entries, so a busy machine slows both alike,
// and reports the median block of each: base and masked ns/entry, the
// added ns/entry and ns/MiB of text, and masked/base.
func BenchmarkActivityMaskInterleaved(b *testing.B) {
	lines := chattyLines(4096)
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	secrets := make([]string, 64)
	for i := range secrets {
		secrets[i] = fmt.Sprintf("value-%02d-%x", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	base, err := Open(b.TempDir(), "base", Options{FileMaxBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	masked, err := Open(b.TempDir(), "masked", Options{FileMaxBytes: -1, Mask: mask.New(secrets...).Func()})
	if err != nil {
		b.Fatal(err)
	}
	block := func(l *Log) time.Duration {
		t0 := time.Now()
		for _, s := range lines {
			l.Output(s)
		}
		return time.Since(t0)
	}
	var tb, tm []time.Duration
	for b.Loop() {
		tb = append(tb, block(base))
		tm = append(tm, block(masked))
	}
	slices.Sort(tb)
	slices.Sort(tm)
	mb, mm := tb[len(tb)/2], tm[len(tm)/2]
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(len(lines)) }
	b.ReportMetric(per(mb), "base-ns/entry")
	b.ReportMetric(per(mm), "masked-ns/entry")
	b.ReportMetric(per(mm)-per(mb), "added-ns/entry")
	b.ReportMetric(float64((mm-mb).Nanoseconds())*float64(1<<20)/float64(size)/1e6, "added-ms/MiB")
	b.ReportMetric(float64(mm)/float64(mb), "masked/base")
	b.ReportMetric(0, "ns/op")
	base.Close()
	masked.Close()
}
