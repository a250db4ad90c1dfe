// Command bench measures the harness daemon against its targets: the tools/call round trip of a tiny upstream
// reached directly, through `harness mcp` (as a byte pipe, and with its
// stdio handed to the daemon) and through the Streamable HTTP endpoint (part
// 1), a daemon carrying a large fleet (part 2) and a fleet of TUI harnesses
// idle on their dialogs (part 2b), `harness_list` over MCP next to `harness
// list --json` and an in-process control call (part 3), the per-call cost of
// the MCP call log, on against off in the same run (part 4), `harness top` on
// that fleet in tmux (part 5: state change to screen, idle CPU next to a
// client that re-lists every second), and keystroke to echo through
// `harness attach` next to a bare PTY (part 6); with -parts ssh, `list` and
// `attach` through ssh on loopback next to the local socket (part 7); with
// -parts notify, a harness's failure to a [notify.*] receiver's request
// next to the same event on the subscription, N harnesses failing at once
// (part 8; its first commit called it part 7); a sandboxed harness's start
// to first screen next to an unconfined one, and the egress proxy's
// latency and throughput (part 10); with -parts links, an answer from a
// notification's action link, from its POST to the keys the agent reads,
// next to the same answer over the control socket (part 11).
//
// It builds the harness binary into a temporary directory, starts real
// daemons on temporary state directories and prints markdown tables, marking
// each target PASS or MISS:
//
//	go run ./bench                 # everything, full sizes
//	go run ./bench -quick          # small sizes, for a quick look
//	go run ./bench -parts calls -sessions 1,32 -calls 2000
//	go run ./bench -parts tui -harnesses 200  # part 2b alone
//	go run ./bench -cpuprofile /tmp/prof   # also write the daemons' CPU (and part 2b's heap) profiles
//
// With -cpuprofile the daemons run inside this program (the hidden
// -serve-daemon mode calls internal/daemon.Run under runtime/pprof), so the
// profile covers exactly the daemon's work while the benchmark drives it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the sizes and switches of one benchmark run.
type options struct {
	Parts    map[string]bool // "calls", "fleet", "calllog", "top"
	Sessions []int           // concurrency levels of part 1
	Paths    map[string]bool // paths of part 1 (a, a1, r, r', b, b', c)
	// CallUpstreams are the upstreams part 1 calls, one after the other
	// (demo, typed: callUpstreams).
	CallUpstreams []string
	Calls         int           // timed calls per session per round
	Rounds        int           // interleaved rounds per level
	Warmup        int           // untimed calls per session before the rounds
	Harnesses     int           // fleet size of part 2
	Upstreams     int           // upstream count of part 2
	ListRuns      int           // CLI `list --json` invocations
	InprocRuns    int           // in-process list calls
	MCPRuns       int           // harness_list calls over MCP
	FleetSess     int           // MCP sessions that touch every upstream in part 2
	StopGrace     int           // stop_grace of the fleet, seconds
	TopIdle       time.Duration // idle window of each part 5 CPU measurement
	IdleRSS       time.Duration // part 2b: how long to follow the idle daemon's RSS after it settled (0: not)
	TopSamples    int           // state changes timed to the screen in part 5
	Keys          int           // timed keystrokes per path per round (part 6)
	Bin           string        // prebuilt harness binary; empty builds one
	ProfileDir    string        // where daemon CPU profiles go; empty: none
	Verbose       io.Writer     // progress lines; nil for none
	Keep          bool          // keep the temporary directory when the run fails
	DaemonEnv     []string      // extra KEY=VALUE for the daemons (and what they spawn)
	DaemonArgs    []string      // extra flags of `harness daemon`, e.g. --cgroup=off
	LogCalls      int           // timed calls per variant per round of part 4
	CallFleet     int           // sleepers running in part 1's daemon while it is measured
	AgentDrawing  int           // part 9: agents redrawing while its transitions are timed
}

// defaults returns the full-size options, or the -quick ones.
func defaults(quick bool) options {
	o := options{
		Parts:    map[string]bool{"calls": true, "fleet": true, "calllog": true, "top": true, "attach": true, "sandbox": true},
		Sessions: []int{1, 8, 32}, Calls: 400, Rounds: 3, Warmup: 50, CallUpstreams: []string{"demo", "typed"},
		Harnesses: 200, Upstreams: 10, ListRuns: 100, InprocRuns: 1000, MCPRuns: 300,
		FleetSess: 20, StopGrace: 2, LogCalls: 5000, TopIdle: 10 * time.Second, TopSamples: 20, Keys: 500,
	}
	if quick {
		o.Sessions = []int{1, 8}
		o.Calls, o.Rounds, o.Warmup = 100, 1, 10
		o.Harnesses, o.Upstreams = 40, 3
		o.ListRuns, o.InprocRuns, o.MCPRuns, o.FleetSess = 10, 100, 30, 4
		o.LogCalls = 1000
		o.TopIdle, o.TopSamples = 2*time.Second, 4
		o.Keys = 100
	}
	return o
}

// serveMode runs the hidden mode args[1] names, if it names one, and
// exits: the bench re-executes its own binary (this program, or the
// package's test binary) as relay, ticker, TUI child and daemon.
func serveMode(args []string) {
	if len(args) < 2 {
		return
	}
	var what string
	var err error
	// A claude-code harness gets the agent wiring's --settings=… before its
	// own args.
	if i := slices.Index(args, "-serve-agent"); i > 1 {
		args = append([]string{args[0]}, args[i:]...)
	}
	switch {
	case args[1] == "-serve-http-relay":
		what, err = "bench http relay", serveHTTPRelay(args[2:])
	case args[1] == "-serve-typed-upstream":
		what, err = "bench typed upstream", serveTypedUpstream(args[2:])
	case args[1] == "-serve-relay":
		what, err = "bench relay", serveRelay(args[2:])
	case args[1] == "-serve-ticker" && len(args) > 2:
		serveTicker(args[2])
	case args[1] == "-serve-tui":
		what, err = "bench tui", serveTUI(args[2:])
	case args[1] == "-serve-agent":
		what, err = "bench agent", serveAgent(args[2:])
	case args[1] == "-serve-daemon":
		what, err = "bench daemon", serveDaemon(args[2:])
	default:
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func main() {
	serveMode(os.Args)
	quick := false
	for _, a := range os.Args[1:] {
		if a == "-quick" || a == "--quick" || a == "-quick=true" || a == "--quick=true" {
			quick = true
		}
	}
	o := defaults(quick)
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.Bool("quick", false, "small sizes (sessions 1,8; 100 calls; 40 harnesses, 3 upstreams)")
	parts := fs.String("parts", "calls,fleet,calllog,top,attach,sandbox", "parts to run: calls (part 1), fleet (parts 2, 2b and 3), fleet2 (parts 2 and 3 without 2b), tui (part 2b alone), calllog (part 4), top (part 5), attach (part 6), notify (part 8, on request), agent (part 9: agent state latency and rule CPU, on request), sandbox (part 10: a sandboxed start next to a plain one, the egress proxy), links (part 11: an answer from a notification's action link against one over the socket, on request)")
	paths := fs.String("paths", strings.Join(pathOrder, ","), "paths of part 1 (the targets need a, a1, r, r', b and b')")
	sessions := fs.String("sessions", joinInts(o.Sessions), "concurrent sessions of part 1, comma separated")
	callUps := fs.String("call-upstreams", strings.Join(o.CallUpstreams, ","), "upstreams part 1 calls, one after the other: demo (harness demo-upstream's echo), typed (an echo with a typed input schema and no annotations)")
	fs.IntVar(&o.Calls, "calls", o.Calls, "timed calls per session per round (part 1)")
	fs.IntVar(&o.Rounds, "rounds", o.Rounds, "interleaved measurement rounds (part 1)")
	fs.IntVar(&o.Warmup, "warmup", o.Warmup, "untimed calls per session before measuring")
	fs.IntVar(&o.AgentDrawing, "agent-drawing", 0, "part 9: claude-code agents redrawing a clock once a second while the screen changes are timed")
	fs.IntVar(&o.CallFleet, "call-fleet", 0, "sleeping harnesses running in part 1's daemon while its paths are measured, e.g. 1000")
	fs.IntVar(&o.Harnesses, "harnesses", o.Harnesses, "harnesses in the fleet daemon (part 2)")
	fs.IntVar(&o.Upstreams, "upstreams", o.Upstreams, "upstreams in the fleet daemon (part 2)")
	fs.IntVar(&o.ListRuns, "list-runs", o.ListRuns, "`harness list --json` CLI invocations")
	fs.IntVar(&o.InprocRuns, "inproc-runs", o.InprocRuns, "in-process list calls")
	fs.IntVar(&o.MCPRuns, "mcp-runs", o.MCPRuns, "harness_list calls over MCP")
	fs.IntVar(&o.FleetSess, "fleet-sessions", o.FleetSess, "MCP sessions calling every upstream before the process count")
	fs.IntVar(&o.Keys, "keys", o.Keys, "timed keystrokes per path per round (part 6)")
	fs.IntVar(&o.StopGrace, "stop-grace", o.StopGrace, "stop_grace of the fleet harnesses, seconds")
	fs.IntVar(&o.LogCalls, "log-calls", o.LogCalls, "timed calls per variant per round (part 4)")
	fs.DurationVar(&o.TopIdle, "top-idle", o.TopIdle, "idle window of each `harness top` CPU measurement (part 5)")
	fs.DurationVar(&o.IdleRSS, "idle-rss", 0, "part 2b: follow the idle daemon's RSS this long after it settled (the runtime collects at least every 2 minutes)")
	fs.IntVar(&o.TopSamples, "top-samples", o.TopSamples, "state changes timed to the `harness top` screen (part 5)")
	fs.StringVar(&o.Bin, "bin", "", "use this harness binary instead of building one")
	fs.StringVar(&o.ProfileDir, "cpuprofile", "", "run the daemons in-process and write their CPU profiles to this directory")
	fs.BoolVar(&o.Keep, "keep", true, "keep the temporary directory (logs) when the run fails")
	fs.Func("daemon-env", "KEY=VALUE added to the daemons' environment (repeatable), e.g. GOGC=400", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE")
		}
		o.DaemonEnv = append(o.DaemonEnv, v)
		return nil
	})
	fs.Func("daemon-arg", "a flag added to `harness daemon` (repeatable), e.g. --cgroup=off", func(v string) error {
		if !strings.HasPrefix(v, "-") {
			return fmt.Errorf("want a flag, such as --cgroup=off")
		}
		o.DaemonArgs = append(o.DaemonArgs, v)
		return nil
	})
	verbose := fs.Bool("v", true, "progress on stderr")
	_ = fs.Parse(os.Args[1:])
	var err error
	if o.Sessions, err = parseInts(*sessions); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -sessions:", err)
		os.Exit(2)
	}
	o.CallUpstreams = nil
	for _, u := range strings.Split(*callUps, ",") {
		o.CallUpstreams = append(o.CallUpstreams, strings.TrimSpace(u))
	}
	o.Paths = map[string]bool{}
	for _, p := range strings.Split(*paths, ",") {
		o.Paths[strings.TrimSpace(p)] = true
	}
	o.Parts = map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		o.Parts[strings.TrimSpace(p)] = true
	}
	if *verbose {
		o.Verbose = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run executes the selected parts and returns their report. A part that
// fails ends the run; the rows measured so far are still returned.
func run(ctx context.Context, o options) (rep *report, err error) {
	rep = &report{Started: time.Now(), Load: loadAvg()}
	tmp, err := os.MkdirTemp("", "hbench")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && o.Keep {
			fmt.Fprintf(os.Stderr, "bench: kept %s (daemon.log, bridge-*.log)\n", tmp)
			return
		}
		_ = os.RemoveAll(tmp)
	}()
	bin := o.Bin
	if bin == "" {
		o.progress("building harness binary")
		if bin, err = buildHarness(ctx, tmp); err != nil {
			return nil, err
		}
	}
	if o.Parts["calls"] {
		if err := runCalls(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 1: %w", err)
		}
	}
	if o.Parts["fleet"] || o.Parts["fleet2"] {
		if err := runFleet(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("parts 2 and 3: %w", err)
		}
	}
	if o.Parts["fleet"] || o.Parts["tui"] {
		if err := runFleetTUI(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 2b: %w", err)
		}
	}
	if o.Parts["calllog"] {
		if err := runCallLog(ctx, o, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 4: %w", err)
		}
	}
	if o.Parts["top"] {
		if err := runTop(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 5: %w", err)
		}
	}
	if o.Parts["attach"] {
		if err := runAttach(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 6: %w", err)
		}
	}
	if o.Parts["ssh"] {
		if err := runSSH(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 7: %w", err)
		}
	}
	if o.Parts["notify"] {
		if err := runNotify(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 8: %w", err)
		}
	}
	if o.Parts["agent"] {
		if err := runAgent(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 9: %w", err)
		}
	}
	if o.Parts["links"] {
		if err := runLinks(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 11: %w", err)
		}
	}
	if o.Parts["sandbox"] {
		if err := runSandbox(ctx, o, bin, tmp, rep); err != nil {
			return rep, fmt.Errorf("part 10: %w", err)
		}
	}
	rep.LoadAfter = loadAvg()
	return rep, nil
}

// progress prints one progress line when the run is verbose.
func (o options) progress(format string, args ...any) {
	if o.Verbose != nil {
		fmt.Fprintf(o.Verbose, "bench: "+format+"\n", args...)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
