package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"
)

// stats summarises one set of latency samples.
type stats struct {
	N             int
	P50, P99, Max time.Duration
}

// summarize sorts samples in place and takes nearest-rank percentiles.
func summarize(samples []time.Duration) stats {
	slices.Sort(samples)
	return stats{N: len(samples), P50: pct(samples, 0.50), P99: pct(samples, 0.99), Max: pct(samples, 1)}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// callRow is one path at one concurrency level of part 1.
type callRow struct {
	Upstream   string // the upstream called: demo or typed (callUpstreams)
	Sessions   int
	Path       string // a, a1, r, r', b, b', c
	Stats      stats
	Throughput float64 // calls per second over all sessions
	CPU        cpuUse  // CPU time per call, by process role
}

// metricRow is one measurement of parts 2 and 3.
type metricRow struct {
	Part, Name, Value string
}

// target is one goal of the benchmark with its verdict.
type target struct {
	Name, Measured string
	Pass           bool
}

// report is everything one run measured.
type report struct {
	Started         time.Time
	Load, LoadAfter string
	Calls           []callRow
	Metrics         []metricRow
	Targets         []target
	Attach          []attachRow // part 6
	SSH             []sshRow    // part 7

	// WebSplit is path (w)'s trips split by marks in the page (part 6):
	// input, wire, deliver (bench/web.go).
	WebSplit map[string]stats
}

// pathNames explains the part 1 path letters.
var pathNames = map[string]string{
	"a":  "direct stdio, one upstream process per session",
	"a1": "direct stdio, one upstream process shared by all sessions",
	"r":  "harness mcp -> byte relay (no JSON work) -> upstream, one upstream per session: the floor under (b)",
	"r'": "byte relay on the client's own stdio (handed over by harness mcp) -> upstream, one upstream per session: the floor under (b')",
	"b":  "harness mcp -> daemon -> upstream (byte pipe, HARNESS_MCP_HANDOFF=0)",
	"b'": "daemon on the client's own stdio (handed over by harness mcp) -> upstream",
	"s'": "(b') with the tools/call fast path off (HARNESS_MCP_FASTPATH=0): every message through the go-sdk",
	"c":  "HTTP endpoint -> daemon -> upstream, at the protocol version the go-sdk client negotiates (2026-07-28: stateless requests)",
	"c'": "HTTP endpoint -> daemon -> upstream, the client pinned to 2025-11-25 (an MCP session, as the TS SDK and older clients speak)",
	"h":  "HTTP relay in the daemon's place (each body handed to the upstream's stdin as it is, its answer as application/json; 1 session only): the floor under (c)",
}

// pathOrder is the order paths are listed in.
var pathOrder = []string{"a", "a1", "r", "r'", "b", "b'", "s'", "c", "c'", "h"}

// call returns the part 1 row of path at n sessions, calling the demo
// upstream.
func (r *report) call(n int, path string) (callRow, bool) { return r.callOf("demo", n, path) }

// callOf returns the part 1 row of path at n sessions, calling upstream.
func (r *report) callOf(upstream string, n int, path string) (callRow, bool) {
	for _, c := range r.Calls {
		if c.Upstream == upstream && c.Sessions == n && c.Path == path {
			return c, true
		}
	}
	return callRow{}, false
}

func (r *report) metric(part, name, format string, args ...any) {
	r.Metrics = append(r.Metrics, metricRow{part, name, fmt.Sprintf(format, args...)})
}

func (r *report) target(name string, pass bool, format string, args ...any) {
	r.Targets = append(r.Targets, target{name, fmt.Sprintf(format, args...), pass})
}

// print writes the report as markdown tables.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nload average before: %s, after: %s\n", r.Load, r.LoadAfter)
	if len(r.Calls) > 0 {
		fmt.Fprintf(w, "\n### Part 1: tools/call `echo` round trip\n\n")
		for _, p := range pathOrder {
			fmt.Fprintf(w, "- (%s) %s\n", p, pathNames[p])
		}
		for _, u := range callUpstreams {
			fmt.Fprintf(w, "- upstream %s: %s\n", u.kind, u.about)
		}
		fmt.Fprintf(w, "\n| upstream | sessions | path | calls | p50 | p99 | calls/s | p50 vs (a) | p50 - (a) | calls/s vs (a) | calls/s vs (a1) |\n")
		fmt.Fprintf(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Calls {
			a, _ := r.callOf(c.Upstream, c.Sessions, "a")
			a1, _ := r.callOf(c.Upstream, c.Sessions, "a1")
			fmt.Fprintf(w, "| %s | %d | %s | %d | %s | %s | %.0f | %s | %s | %s | %s |\n",
				c.Upstream, c.Sessions, c.Path, c.Stats.N, us(c.Stats.P50), us(c.Stats.P99), c.Throughput,
				ratio(float64(c.Stats.P50), float64(a.Stats.P50)), us(c.Stats.P50-a.Stats.P50),
				ratio(c.Throughput, a.Throughput), ratio(c.Throughput, a1.Throughput))
		}
		fmt.Fprintf(w, "\nCPU time per call, by process (user + system, from /proc; %d cores, so %d cores / all = the CPU-bound ceiling):\n\n", runtime.NumCPU(), runtime.NumCPU())
		fmt.Fprintf(w, "| upstream | sessions | path | client | bridges | daemon | upstream | all | ceiling calls/s | measured / ceiling |\n")
		fmt.Fprintf(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Calls {
			ceiling := 0.0
			if t := c.CPU.total(); t > 0 {
				ceiling = float64(runtime.NumCPU()) * float64(time.Second) / float64(t)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %.0f | %s |\n", c.Upstream, c.Sessions, c.Path,
				us(c.CPU.Client), us(c.CPU.Bridge), us(c.CPU.Daemon), us(c.CPU.Upstream), us(c.CPU.total()),
				ceiling, ratio(c.Throughput, ceiling))
		}
	}
	if len(r.Metrics) > 0 {
		fmt.Fprintf(w, "\n### Other measurements (the part column says which)\n\n| part | measurement | value |\n|---|---|---|\n")
		for _, m := range r.Metrics {
			fmt.Fprintf(w, "| %s | %s | %s |\n", m.Part, m.Name, m.Value)
		}
	}
	r.printAttach(w)
	r.printSSH(w)
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "\n### Targets\n\n| target | measured | result |\n|---|---|---|\n")
		for _, t := range r.Targets {
			v := "PASS"
			if !t.Pass {
				v = "MISS"
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Measured, v)
		}
	}
}

// us formats a duration in microseconds, or milliseconds from 10 ms on.
func us(d time.Duration) string {
	if d >= 10*time.Millisecond || d <= -10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%d µs", d.Microseconds())
}

func ratio(x, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x/base)
}
