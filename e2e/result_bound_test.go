//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScenario_AnOversizedUpstreamResultIsRefusedAsItStreamsIn: a 14 MB
// tool result, from a stdio upstream and from a remote one (each behind a
// daemon of its own, so one's memory cannot hide the other's), is refused
// under a max_result_bytes of 6 MiB with upstream_unavailable naming the
// bound, read past as it streams in rather than held whole: the daemon's
// peak RSS grows by less than 16 MiB (holding a result whole costs a
// multiple of its size: a 50 MB one peaked at 283 MB). The upstream stays
// connected and answers the next call, a result under the bound still
// goes through whole, and describe shows the bound. (Sizes a quarter of
// the default bound's: making the result is most of the test's time.)
func TestScenario_AnOversizedUpstreamResultIsRefusedAsItStreamsIn(t *testing.T) {
	const bound = "max_result_bytes = 6291456"
	for _, kind := range []string{"stdio", "remote"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			table := upstreamTable("x", "bound-stdio", bound)
			if kind == "remote" {
				table = remoteTable("x", startHTTPUpstream(t, "bound-remote").URL(), bound)
			}
			f := newFleet(t, table)
			var info struct {
				PID int `json:"pid"`
			}
			f.MustJSON(&info, "daemon-info")
			s := f.mcpSession("", false, nil)
			waitTool(t, f, s, "x__big")
			// Warm up with a small result: a large one would raise the
			// peak and leave the heap room that hides the growth.
			if got := text(t, callTool(t, s, "x__big", map[string]any{"bytes": 1000})); len(got) != 1000 {
				t.Fatalf("a 1000 byte result came back as %d bytes", len(got))
			}
			if out := f.MustRun("describe", "mcp.x", "--json"); !strings.Contains(out, `"max_result_bytes": 6291456`) {
				t.Errorf("describe does not show max_result_bytes:\n%s", out)
			}

			// The peak starts again from the daemon's RSS now.
			if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", info.PID), []byte("5"), 0); err != nil {
				t.Fatalf("reset the daemon's peak RSS: %v", err)
			}
			before := peakRSSKiB(t, info.PID)
			// Making 14 MB of JSON takes the upstream a while under -race.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "x__big", Arguments: map[string]any{"bytes": 14_000_000}})
			if err != nil {
				t.Fatalf("a 14 MB result: protocol error %v", err)
			}
			if code := errorCode(t, res); code != "upstream_unavailable" || !strings.Contains(text(t, res), "max_result_bytes of [mcp.x]") {
				t.Errorf("a 14 MB result answered %q: %.300s", code, text(t, res))
			}
			grew := peakRSSKiB(t, info.PID) - before
			t.Logf("%s: the daemon's peak RSS grew by %d KiB refusing a 14 MB result (from %d KiB) in %v", kind, grew, before, time.Since(start).Round(time.Millisecond))
			if grew >= 16<<10 {
				t.Errorf("the daemon's peak RSS grew by %d KiB refusing a 14 MB result, want < 16 MiB", grew)
			}

			// The upstream is still there and answers.
			f.WaitFor("x to answer again", 20*time.Second, func() bool {
				res := callTool(t, s, "x__echo", map[string]any{"text": "still here"})
				return !res.IsError && text(t, res) == "still here"
			})
			// A result under the bound still goes through whole.
			if got := text(t, callTool(t, s, "x__big", map[string]any{"bytes": 4 << 20})); len(got) != 4<<20 {
				t.Fatalf("a 4 MiB result came back as %d bytes", len(got))
			}
		})
	}
}
