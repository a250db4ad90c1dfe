package mask

import (
	"fmt"
	"strings"
	"testing"
)

// chatty is a stream of lines like an agent's activity: build and test
// output, code, paths, with a credential every 50th line.
func chatty(lines int) []string {
	out := make([]string, lines)
	for i := range out {
		switch {
		case i%50 == 49:
			out[i] = "export GITHUB_TOKEN=" + ghp
		case i%3 == 0:
			out[i] = fmt.Sprintf("ok  \tgithub.com/acme/service/internal/pkg%d\t%d.%03ds", i%17, i%9, i%1000)
		case i%3 == 1:
			out[i] = fmt.Sprintf("    func (s *Server) handle%d(ctx context.Context, req *Request) (*Response, error) {", i)
		default:
			out[i] = fmt.Sprintf("● Reading src/components/Button%d.tsx (%d lines) — the bearer of state is useReducer", i, 40+i%300)
		}
	}
	return out
}

// secrets is what a fleet's env_files typically hold: 64 values.
func secrets() []string {
	s := make([]string, 64)
	for i := range s {
		s[i] = fmt.Sprintf("value-%02d-%x", i, uint64(i)*0x9e3779b97f4a7c15)
	}
	return s
}

// BenchmarkMaskEntry is the cost of masking one activity line (64
// literals loaded); BenchmarkMaskMiB the throughput over a chatty stream.
func BenchmarkMaskEntry(b *testing.B) {
	m := New(secrets()...)
	lines := chatty(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.String(lines[i%len(lines)])
	}
}

func BenchmarkMaskMiB(b *testing.B) {
	m := New(secrets()...)
	text := strings.Join(chatty(20000), "\n")
	text = text[:1<<20]
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = m.String(text)
	}
}
