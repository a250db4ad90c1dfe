package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs the bench in quick mode with tiny sizes: every part
// must produce all of its rows, and the process-count target (one process
// per upstream, however many sessions use it) must hold. Timing targets
// are not asserted: CI machines are too noisy for them.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the harness binary and starts daemons")
	}
	o := defaults(true)
	o.Sessions = []int{1, 2}
	o.Calls, o.Warmup = 20, 5
	o.Harnesses, o.Upstreams = 10, 2
	o.ListRuns, o.InprocRuns, o.MCPRuns, o.FleetSess = 5, 10, 5, 3
	o.StopGrace = 1
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.print(&out)
	t.Log("\n" + out.String())

	for _, n := range o.Sessions {
		for _, p := range []string{"a", "a1", "b", "c"} {
			c, ok := rep.call(n, p)
			if !ok {
				t.Errorf("no row for path %s at %d sessions", p, n)
				continue
			}
			if want := n * o.Calls * o.Rounds; c.Stats.N != want || c.Throughput <= 0 || c.Stats.P50 <= 0 {
				t.Errorf("path %s at %d sessions: %+v, want %d calls", p, n, c, want)
			}
		}
	}
	for _, name := range []string{"RSS, idle", "RSS, all running", "start --all", "list --json", "in process",
		"via `harness mcp`", "via HTTP", "upstream processes", "stop --all"} {
		found := false
		for _, m := range rep.Metrics {
			found = found || strings.Contains(m.Name, name)
		}
		if !found {
			t.Errorf("no metric row containing %q", name)
		}
	}
	if len(rep.Targets) != 6 {
		t.Errorf("%d target rows, want 6", len(rep.Targets))
	}
	for _, tg := range rep.Targets {
		if strings.Contains(tg.Name, "upstream processes") && !tg.Pass {
			t.Errorf("process count target missed: %s", tg.Measured)
		}
	}
	for _, want := range []string{"### Part 1", "### Other measurements", "### Targets", "| 2 | c |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
