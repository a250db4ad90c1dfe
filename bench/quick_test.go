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

// quickPart is one part of the quick run and what its report must hold.
type quickPart struct {
	part    string   // its -parts name
	metrics []string // a metric row must contain each
	tables  []string // the printed report must contain each
	targets func(o options) int
	check   func(t *testing.T, o options, rep *report)
}

var quickParts = []quickPart{
	{
		part:   "calls",
		tables: []string{"### Part 1", "### Targets", "| 2 | c |", "| 2 | b' |", "| 2 | r' |"},
		// (b) and (b') p50 and throughput; per upstream, the fast path's
		// four ((b') over (a), daemon CPU, throughput, (c) against (a))
		// and the HTTP and bridge targets' three ((c), (c'), (b')).
		targets: func(o options) int { return 4 + 7*len(o.CallUpstreams) },
		check: func(t *testing.T, o options, rep *report) {
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
		},
	},
	{
		// Parts 2, 2b and 3.
		part: "fleet",
		metrics: []string{"RSS, idle", "RSS, all running", "start --all", "list --json", "in process",
			"via `harness mcp`", "via HTTP", "upstream processes", "stop --all", "fleet page GET /", "event fan-out",
			"spawn floor", "started into cgroups of their own", "per TUI harness", "idle on its dialog"},
		tables: []string{"### Other measurements", "### Targets"},
		// The page's first paint, fan-out, median and bytes; RSS, list
		// p99, stop --all, upstream processes; 2b's RSS.
		targets: func(options) int { return 9 },
		check: func(t *testing.T, o options, rep *report) {
			for _, tg := range rep.Targets {
				if strings.Contains(tg.Name, "upstream processes") && !tg.Pass {
					t.Errorf("process count target missed: %s", tg.Measured)
				}
			}
		},
	},
	{
		part:    "calllog",
		metrics: []string{"call log off", "call log on", "call log on, call_log_args"},
		targets: func(options) int { return 1 },
		check: func(t *testing.T, o options, rep *report) {
			part4 := 0
			for _, m := range rep.Metrics {
				if m.Part == "4" {
					part4++
				}
			}
			if part4 != 3 {
				t.Errorf("%d part 4 rows, want 3 (call log off, on, on with call_log_args)", part4)
			}
		},
	},
	{
		part:    "top", // `harness top` in tmux
		metrics: []string{"state change to the row on screen", "stopped harness selected", "running harness selected", "every second", "ticker"},
		targets: func(options) int { return 2 }, // state change p99, idle CPU
	},
	{
		part:    "attach",
		tables:  []string{"### Part 6", "| t | 10 |", "| f | 10 |", "(w) - (f) = "},
		targets: func(options) int { return 1 }, // (w) against (t)
		check: func(t *testing.T, o options, rep *report) {
			for _, a := range rep.Attach {
				if a.Stats.N != o.Keys*o.Rounds || a.Stats.P50 <= 0 {
					t.Errorf("attach path %s: %+v, want %d keys", a.Path, a.Stats, o.Keys*o.Rounds)
				}
			}
			if len(rep.Attach) != 5 {
				t.Errorf("%d attach rows, want 5 (bare PTY, stream, harness attach, the web dashboard, the browser's floor)", len(rep.Attach))
			}
		},
	},
	{
		part:    "sandbox",
		metrics: []string{"start to first screen, unsandboxed", "start to first screen, fs = workdir", "through the proxy", "proxy throughput"},
		targets: func(options) int { return 1 }, // sandboxed start against a plain one
	},
}

// TestQuickRun runs each part of the bench in quick mode with tiny sizes,
// side by side: every part must produce all of its rows, and the
// process-count target (one process per upstream, however many sessions
// use it) must hold. Timing targets are not asserted: CI machines are too
// noisy for them, and here the parts share the machine.
func TestQuickRun(t *testing.T) {
	// Builds the binary and starts daemons: the end-to-end tier. Parts 5
	// and 6 drive tmux and Chromium.
	testenv.Program(t, "tmux")
	testenv.File(t, chromium, "Debian's chromium")
	// The binary is built before the clock starts: a cold build cache on a
	// loaded machine alone took longer than the whole budget.
	bin, err := buildHarness(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, qp := range quickParts {
		t.Run(qp.part, func(t *testing.T) {
			t.Parallel()
			o := quickOptions(bin)
			o.Parts = map[string]bool{qp.part: true}
			// 90 s is the whole quick run's budget on 2 quiet cores; -race
			// multiplies it.
			ctx, cancel := context.WithTimeout(context.Background(), raceScale*90*time.Second)
			defer cancel()
			rep, err := run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.print(&out)
			t.Log("\n" + out.String())
			for _, name := range qp.metrics {
				found := false
				for _, m := range rep.Metrics {
					found = found || strings.Contains(m.Name, name)
				}
				if !found {
					t.Errorf("no metric row containing %q", name)
				}
			}
			for _, want := range qp.tables {
				if !strings.Contains(out.String(), want) {
					t.Errorf("table lacks %q", want)
				}
			}
			if want := qp.targets(o); len(rep.Targets) != want {
				t.Errorf("%d target rows, want %d", len(rep.Targets), want)
			}
			if qp.check != nil {
				qp.check(t, o, rep)
			}
		})
	}
}

// quickOptions are the quick run's tiny sizes on bin.
func quickOptions(bin string) options {
	o := defaults(true)
	o.Bin = bin
	o.Sessions = []int{1, 2}
	o.Calls, o.Warmup = 20, 5
	o.Harnesses, o.Upstreams = 10, 2
	o.ListRuns, o.InprocRuns, o.MCPRuns, o.FleetSess = 5, 10, 5, 3
	o.StopGrace = 1
	o.LogCalls = 200
	o.TopIdle, o.TopSamples = time.Second, 2
	o.Keys = 10
	return o
}

// TestQuickParts_CoverTheDefaultRun: a part added to the default run
// needs its own row in quickParts, or the quick run would not run it.
func TestQuickParts_CoverTheDefaultRun(t *testing.T) {
	covered := map[string]bool{}
	for _, qp := range quickParts {
		covered[qp.part] = true
	}
	for p := range defaults(true).Parts {
		if !covered[p] {
			t.Errorf("part %q of the default run has no quick test", p)
		}
	}
}
