//go:build e2e

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// TestQuickRun runs the bench in quick mode with tiny sizes: every part
// (part 5 runs `harness top` in tmux) must produce all of its rows, and
// the process-count target (one process per upstream, however many
// sessions use it) must hold. Timing targets are not asserted: CI
// machines are too noisy for them.
func TestQuickRun(t *testing.T) {
	// Builds the binary and starts daemons: the end-to-end tier. Parts 5
	// and 6 drive tmux and Chromium.
	testenv.Program(t, "tmux")
	testenv.File(t, chromium, "Debian's chromium")
	o := defaults(true)
	o.Sessions = []int{1, 2}
	o.Calls, o.Warmup = 20, 5
	o.Harnesses, o.Upstreams = 10, 2
	o.ListRuns, o.InprocRuns, o.MCPRuns, o.FleetSess = 5, 10, 5, 3
	o.StopGrace = 1
	o.LogCalls = 200
	o.TopIdle, o.TopSamples = time.Second, 2
	o.Keys = 10
	// The binary is built before the clock starts: a cold build cache on a
	// loaded machine alone took longer than the whole budget.
	bin, err := buildHarness(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Bin = bin
	// 90 s is the quick run's budget on 2 quiet cores; -race multiplies it.
	ctx, cancel := context.WithTimeout(context.Background(), raceScale*90*time.Second)
	defer cancel()
	rep, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.print(&out)
	t.Log("\n" + out.String())

	for _, n := range o.Sessions {
		for _, p := range pathOrder {
			if p == "s'" {
				continue // with no -paths the run leaves (s') out: it needs a daemon of its own
			}
			if p == "h" && n > 1 {
				continue // one session only
			}
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
		"via `harness mcp`", "via HTTP", "upstream processes", "stop --all", "fleet page GET /", "event fan-out", "spawn floor",
		"call log off", "call log on", "call log on, call_log_args",
		"state change to the row on screen", "stopped harness selected", "running harness selected", "every second", "ticker", "per TUI harness", "idle on its dialog"} {
		found := false
		for _, m := range rep.Metrics {
			found = found || strings.Contains(m.Name, name)
		}
		if !found {
			t.Errorf("no metric row containing %q", name)
		}
	}
	part4 := 0
	for _, m := range rep.Metrics {
		if m.Part == "4" {
			part4++
		}
	}
	if part4 != 3 {
		t.Errorf("%d part 4 rows, want 3 (call log off, on, on with call_log_args)", part4)
	}
	// 13, part 10's sandboxed start against a plain one, part 2's fleet
	// page (time, bytes, first paint) and event fan-out, the fast path's four for each
	// upstream of part 1 at sessions 1 and 8: (b') over (a), daemon CPU,
	// throughput at 8, (c) against (a); and the HTTP and bridge targets'
	// three: (c), (c') against (a), (b') over (a).
	if want := 18 + 7*len(o.CallUpstreams); len(rep.Targets) != want {
		t.Errorf("%d target rows, want %d", len(rep.Targets), want)
	}
	for _, tg := range rep.Targets {
		if strings.Contains(tg.Name, "upstream processes") && !tg.Pass {
			t.Errorf("process count target missed: %s", tg.Measured)
		}
	}
	for _, a := range rep.Attach {
		if a.Stats.N != o.Keys*o.Rounds || a.Stats.P50 <= 0 {
			t.Errorf("attach path %s: %+v, want %d keys", a.Path, a.Stats, o.Keys*o.Rounds)
		}
	}
	if len(rep.Attach) != 5 {
		t.Errorf("%d attach rows, want 5 (bare PTY, stream, harness attach, the web dashboard, the browser's floor)", len(rep.Attach))
	}
	for _, want := range []string{"### Part 1", "### Other measurements", "### Targets", "| 2 | c |", "### Part 6", "| t | 10 |", "| f | 10 |", "(w) - (f) = ", "| 2 | b' |", "| 2 | r' |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
