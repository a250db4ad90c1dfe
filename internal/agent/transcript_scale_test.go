package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A long Claude Code session is read in time proportional to its size:
// the bounded read keeps up to 16 MiB, which can be ~100,000 lines of
// short messages, read at every Stop hook and every `turns`. Reading four
// times the lines takes about four times as long, not sixteen (a lookup
// of each message id among all the earlier ones took 84 s for 16 MiB).
func TestScenario_ALongClaudeSessionIsReadInLinearTime(t *testing.T) {
	transcript := func(n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"type":"assistant","sessionId":"s","message":{"id":"msg_%08d","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n", i)
		}
		return []byte(b.String())
	}
	fastest := func(data []byte, want int) time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			t0 := time.Now()
			tr := readClaudeTranscript(data)
			best = min(best, time.Since(t0))
			if len(tr.Turns) != want || tr.Usage.Input != int64(want) {
				t.Fatalf("%d messages read as %d turns, %d input tokens", want, len(tr.Turns), tr.Usage.Input)
			}
		}
		return best
	}
	const n = 2500
	small, big := transcript(n), transcript(4*n)
	ts, tb := fastest(small, n), fastest(big, 4*n)
	if ratio := float64(tb) / float64(ts); ratio > 10 {
		t.Fatalf("%d messages took %v, %d took %v: %.1f times as long for 4 times the lines", n, ts, 4*n, tb, ratio)
	}
}
