package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Part 9: agent state. A harness that draws like Claude Code
// (this program in -serve-agent mode) flips between its working screen
// ("esc to interrupt") and its prompt ("? for shortcuts") at every Enter
// it reads, and notes the time of each redraw. The latency from that
// redraw to the `agent` event on the subscription is compared with the
// `activity` (busy) event the same redraw causes, in the same run: the
// busy event is the terminal's own signal, with no rules, sampling or
// debounce. Then o.Harnesses such harnesses redraw a clock once a second
// each, as agents' status lines do, and the daemon's CPU with the
// claude-code adapter (every redraw read by its screen rules) is compared
// with the same fleet as generic harnesses (busy/idle only).

// agentTransitions is how many screen changes part 9 times.
func agentTransitions(o options) int {
	if o.Harnesses < 200 {
		return 40
	}
	return 200
}

// serveAgent is the -serve-agent mode: FILE gets one line (Unix
// nanoseconds) per redraw after the first; with "clock" the screen is
// redrawn once a second instead, forever.
func serveAgent(args []string) error {
	if len(args) < 1 {
		return errors.New("usage: -serve-agent FILE|clock")
	}
	screen := func(working bool, clock string) string {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J ▐▛███▜▌   Claude Code v2.1.328\r\n\r\n❯ Make the file\r\n\r\n")
		if working {
			b.WriteString("✻ Cooking… (3s · esc to interrupt)\r\n")
		}
		b.WriteString("────────────────\r\n❯ \r\n────────────────\r\n  ? for shortcuts " + clock + "\r\n")
		if working {
			// The working screen has no prompt line: drop the shortcuts
			// hint, as Claude Code does while it streams.
			return strings.Replace(b.String(), "  ? for shortcuts "+clock, "  esc to interrupt "+clock, 1)
		}
		return b.String()
	}
	if args[0] == "dialog" && len(args) > 1 {
		return serveDialog(args[1]) // part 11
	}
	if args[0] == "still" {
		_, _ = os.Stdout.WriteString(screen(false, ""))
		time.Sleep(1 << 62)
	}
	if args[0] == "clock" {
		for {
			_, _ = os.Stdout.WriteString(screen(false, time.Now().Format("15:04:05")))
			time.Sleep(time.Second)
		}
	}
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _ = os.Stdout.WriteString(screen(false, ""))
	working := false
	in := bufio.NewReader(os.Stdin)
	for {
		if _, err := in.ReadString('\n'); err != nil {
			return nil
		}
		working = !working
		at := time.Now() // before the write: the screen changes with it
		_, _ = os.Stdout.WriteString(screen(working, ""))
		fmt.Fprintf(f, "%d\n", at.UnixNano())
	}
}

// runAgent is part 9.
func runAgent(ctx context.Context, o options, bin, tmp string, rep *report) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	n := agentTransitions(o)
	part := fmt.Sprintf("9 (agent state, %d transitions)", n)
	marks := filepath.Join(tmp, "agent-redraws")
	cfg := fmt.Sprintf("[harness.a]\ncmd = %q\nargs = [\"-serve-agent\", %q]\nagent = \"claude-code\"\nmcp_wire = false\nidle_after = 0.1\nstop_grace = 1\n", exe, marks)
	// -agent-drawing: that many claude-code agents redraw a clock once a
	// second while the transitions are timed.
	for i := range o.AgentDrawing {
		cfg += fmt.Sprintf("\n[harness.c%03d]\ncmd = %q\nargs = [\"-serve-agent\", \"clock\"]\nagent = \"claude-code\"\nmcp_wire = false\nidle_after = 0.5\nstop_grace = 1\nenabled = true\n", i, exe)
	}
	if o.AgentDrawing > 0 {
		part = fmt.Sprintf("9 (agent state, %d transitions, %d other agents drawing)", n, o.AgentDrawing)
	}
	d, err := startDaemon(ctx, o, bin, tmp, "agent", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.waitRunning(ctx, o.AgentDrawing, 2*time.Minute); err != nil {
		return err
	}
	events, stopEvents, err := d.subscribe(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	if _, err := d.cli(ctx, "start", "a"); err != nil {
		return err
	}
	// next waits for the unit's next event that ok accepts and returns
	// when it arrived.
	var last api.Event
	next := func(ok func(api.Event) bool) (at time.Time, err error) {
		last, at, err = awaitEvent(ctx, events, 10*time.Second, func(ev api.Event) bool { return ev.Unit == "a" && ok(ev) })
		return at, err
	}
	agentIs := func(s api.AgentState) func(api.Event) bool {
		return func(ev api.Event) bool {
			return ev.Kind == api.EventAgent && ev.Agent != nil && ev.Agent.AgentState == s
		}
	}
	activityIs := func(a string) func(api.Event) bool {
		return func(ev api.Event) bool { return ev.Kind == api.EventActivity && ev.Activity == a }
	}
	if _, err := next(agentIs(api.AgentReady)); err != nil {
		return fmt.Errorf("the agent never became ready: %w", err)
	}
	o.progress("part 9: %d screen changes to agent events", n)
	var agentAt, busyAt []time.Time
	for i := range n {
		want := api.AgentWorking
		if i%2 == 1 {
			want = api.AgentReady
		}
		if err := d.ctl.Call(ctx, api.OpSend, api.SendArgs{Name: "a", Keys: []string{"Enter"}}, &api.SendResult{}); err != nil {
			return err
		}
		// The busy event comes first (no debounce); the agent's and the
		// idle one follow in either order.
		var b, a time.Time
		idle := false
		for b.IsZero() || a.IsZero() || !idle {
			at, err := next(func(ev api.Event) bool {
				return activityIs(api.ActivityBusy)(ev) || activityIs(api.ActivityIdle)(ev) || agentIs(want)(ev)
			})
			if err != nil {
				return fmt.Errorf("transition %d (busy %v, %s %v, idle %v): %w", i, !b.IsZero(), want, !a.IsZero(), idle, err)
			}
			switch ev := last; {
			case ev.Kind == api.EventAgent:
				a = at
			case ev.Activity == api.ActivityBusy:
				b = at
			case !b.IsZero():
				idle = true
			}
		}
		busyAt, agentAt = append(busyAt, b), append(agentAt, a)
	}
	drawn, err := readMarks(marks)
	if err != nil {
		return err
	}
	if len(drawn) != n {
		return fmt.Errorf("the agent noted %d redraws, want %d", len(drawn), n)
	}
	var toAgent, toBusy []time.Duration
	for i := range n {
		toAgent = append(toAgent, agentAt[i].Sub(drawn[i]))
		toBusy = append(toBusy, busyAt[i].Sub(drawn[i]))
	}
	sa, sb := summarize(toAgent), summarize(toBusy)
	rep.metric(part, "screen change -> `activity` busy event (baseline) p50 / p99", "%s / %s", us(sb.P50), us(sb.P99))
	rep.metric(part, "screen change -> `agent` event p50 / p99", "%s / %s", us(sa.P50), us(sa.P99))
	rep.metric(part, "agent event vs busy event, p50 / p99 ratio", "%s / %s", ratio(float64(sa.P50), float64(sb.P50)), ratio(float64(sa.P99), float64(sb.P99)))
	rep.target("screen change -> agent event p99 <= 250 ms", sa.P99 <= 250*time.Millisecond, "%s (p50 %s)", us(sa.P99), us(sa.P50))

	// A hook to its event: the agent's hook call (as `harness hook` makes
	// it, with the run's token, here in process so that no process start
	// is timed) until the `agent` event it causes, alternating a prompt
	// submitted (working) and the end of a turn (ready).
	token, err := runToken(ctx, d, "a")
	if err != nil {
		return err
	}
	o.progress("part 9: %d hooks to agent events", n)
	var toHook []time.Duration
	for i := range n {
		ev, want := "UserPromptSubmit", api.AgentWorking
		if i%2 == 1 {
			ev, want = "Stop", api.AgentReady
		}
		t0 := time.Now()
		if err := d.ctl.Call(ctx, api.OpHook, api.HookArgs{Event: ev, Token: token, Payload: []byte(`{"session_id":"bench"}`)}, &api.HookResult{}); err != nil {
			return fmt.Errorf("hook %s: %w", ev, err)
		}
		at, err := next(agentIs(want))
		if err != nil {
			return fmt.Errorf("hook %d (%s): %w", i, ev, err)
		}
		toHook = append(toHook, at.Sub(t0))
	}
	sh := summarize(toHook)
	rep.metric(part, "hook call -> `agent` event p50 / p99", "%s / %s", us(sh.P50), us(sh.P99))
	rep.target("hook -> agent event p99 <= 20 ms", sh.P99 <= 20*time.Millisecond, "%s (p50 %s)", us(sh.P99), us(sh.P50))
	d.close()
	return runAgentCPU(ctx, o, bin, tmp, exe, rep)
}

// runAgentCPU is part 9's second half: daemon CPU with o.Harnesses
// harnesses redrawing once a second, read by claude-code's rules, against
// the same fleet as generic harnesses.
func runAgentCPU(ctx context.Context, o options, bin, tmp, exe string, rep *report) error {
	part := fmt.Sprintf("9 (agent state, %d agents)", o.Harnesses)
	cpu := map[string]time.Duration{}
	for _, v := range []string{"generic clock", "claude-code clock", "claude-code still"} {
		adapter, mode, _ := strings.Cut(v, " ")
		var b strings.Builder
		for i := range o.Harnesses {
			fmt.Fprintf(&b, "[harness.c%03d]\ncmd = %q\nargs = [\"-serve-agent\", %q]\nagent = %q\nmcp_wire = false\nidle_after = 0.5\nstop_grace = 1\n", i, exe, mode, adapter)
		}
		d, err := startDaemon(ctx, o, bin, tmp, "agentcpu-"+adapter+"-"+mode, b.String())
		if err != nil {
			return err
		}
		o.progress("part 9: %d %s harnesses (%s)", o.Harnesses, adapter, mode)
		if _, err := d.cli(ctx, "start", "--all"); err != nil {
			d.close()
			return err
		}
		if err := d.waitRunning(ctx, o.Harnesses, 2*time.Minute); err != nil {
			d.close()
			return err
		}
		time.Sleep(3 * time.Second) // past the start-up burst
		before := sampleCPU(d.pid())
		time.Sleep(o.TopIdle)
		used := sampleCPU(d.pid()).sub(before).Daemon
		cpu[v] = used
		what := "redrawing once a second"
		if mode == "still" {
			what = "idle at its prompt (no output)"
		}
		rep.metric(part, "daemon CPU, "+adapter+" adapter, each "+what, "%.2f%% of a core", 100*float64(used)/float64(o.TopIdle))
		d.close()
	}
	extra := cpu["claude-code clock"] - cpu["generic clock"]
	rep.metric(part, "claude-code vs generic, redrawing (rules read every redraw): CPU ratio", "%s", ratio(float64(cpu["claude-code clock"]), float64(cpu["generic clock"])))
	rep.metric(part, "rule matching at one redraw per agent per second (claude-code minus generic)", "%.2f%% of a core", 100*float64(extra)/float64(o.TopIdle))
	idle := cpu["claude-code still"]
	rep.target(fmt.Sprintf("CPU of %d idle agents (rules, state tracking) < 1%% of a core", o.Harnesses), float64(idle) < 0.01*float64(o.TopIdle),
		"%.2f%% of a core", 100*float64(idle)/float64(o.TopIdle))
	return nil
}

// runToken reads HARNESS_MCP_TOKEN from the environment of harness
// name's process, as its hooks have it.
func runToken(ctx context.Context, d *benchDaemon, name string) (string, error) {
	var u api.UnitInfo
	if err := d.ctl.Call(ctx, api.OpDescribe, api.NameArg{Name: name}, &u); err != nil {
		return "", err
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", u.PID))
	if err != nil {
		return "", err
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "HARNESS_MCP_TOKEN="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("harness %s (pid %d) has no HARNESS_MCP_TOKEN", name, u.PID)
}

// readMarks reads the redraw times -serve-agent noted.
func readMarks(path string) ([]time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, l := range strings.Fields(string(b)) {
		ns, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, time.Unix(0, ns))
	}
	return out, nil
}
