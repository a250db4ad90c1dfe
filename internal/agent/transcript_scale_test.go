package agent

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A long Claude Code session is read in time proportional to its size:
// the bounded read keeps up to 16 MiB, which can be ~100,000 lines of
// short messages, read at every Stop hook and every `turns`. Reading four
// times the lines takes about four times as long, not sixteen (a lookup
// of each message id among all the earlier ones took 84 s for 16 MiB;
// with this test's ids, 20.7 times as long under -race, against 5.3 now).
func TestScenario_ALongClaudeSessionIsReadInLinearTime(t *testing.T) {
	// Message ids that differ only at their end make each comparison of
	// two of them cost what the ids' length costs, as reading the line
	// does: a search among earlier ids then shows at these sizes even
	// under the race detector, which slows the JSON decoding most.
	prefix := strings.Repeat("x", 2000)
	transcript := func(n int) []byte {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"type":"assistant","sessionId":"s","message":{"id":"msg_%s%08d","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n", prefix, i)
		}
		return []byte(b.String())
	}
	// The process's CPU time, not the wall clock: on a machine busy with
	// other tests (CI runs packages in parallel on 2 cores) the wall
	// clock counts the waits for a core, which made linear read 10.2
	// times as long for 4 times the lines.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	fastest := func(data []byte, want int) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			t0 := cpu()
			tr := readClaudeTranscript(data)
			best = min(best, cpu()-t0)
			if len(tr.Turns) != want || tr.Usage.Input != int64(want) {
				t.Fatalf("%d messages read as %d turns, %d input tokens", want, len(tr.Turns), tr.Usage.Input)
			}
		}
		return best
	}
	const n = 2500
	small, big := transcript(n), transcript(4*n)
	ts, tb := fastest(small, n), fastest(big, 4*n)
	ratio := float64(tb) / float64(ts)
	t.Logf("CPU: %d messages %v, %d messages %v: %.1f times", n, ts, 4*n, tb, ratio)
	if ratio > 10 {
		t.Fatalf("%d messages took %v, %d took %v: %.1f times as long for 4 times the lines", n, ts, 4*n, tb, ratio)
	}
}
