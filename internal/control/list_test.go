package control

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AListOfAgentsUnderAnAgentCapIsLinear: with
// max_concurrent_agents set, each agent's row says whether it is held,
// which needs the fleet's running agents; a list counts them once, not
// once per row (a list of 1,000 such agents took 369 ms, 5.7 ms after).
// Bytes allocated per row are compared at 100 and 400 agents: counting
// per row adds a copy of the fleet to every row.
func TestScenario_AListOfAgentsUnderAnAgentCapIsLinear(t *testing.T) {
	perRow := func(n int) float64 {
		var b strings.Builder
		b.WriteString("[daemon]\nmax_concurrent_agents = 5\n")
		for i := range n {
			b.WriteString(sleeper(fmt.Sprintf("a%04d", i), `agent = "claude-code"`))
		}
		f := newFixture(t, b.String())
		list := func() {
			rows, err := f.c.List(context.Background(), api.ListArgs{})
			if err != nil || len(rows) != n {
				t.Fatalf("list: %d rows, %v", len(rows), err)
			}
		}
		list() // warm up
		least := uint64(1 << 62)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			list()
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		f.close()
		return float64(least) / float64(n)
	}
	small, large := perRow(100), perRow(400)
	t.Logf("bytes allocated per row: %.0f at 100 agents, %.0f at 400", small, large)
	if large > 1.5*small {
		t.Errorf("a row costs %.0f bytes at 400 agents against %.0f at 100: the list grows faster than its rows", large, small)
	}
}
