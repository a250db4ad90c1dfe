package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/cgroup"
	"github.com/harness-dev/harness/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fleetConfig is o.Harnesses sleepers (not enabled, so `start --all` starts
// them) and o.Upstreams demo upstreams, each with a unique --name so that
// its processes can be counted in /proc.
func fleetConfig(o options, bin, tag string) (string, []string) {
	var b strings.Builder
	b.WriteString("[daemon]\nmcp_http = \"127.0.0.1:0\"\n")
	b.WriteString(sleepers(o.Harnesses, o.StopGrace))
	var names []string
	for i := range o.Upstreams {
		name := fmt.Sprintf("%s-u%d", tag, i)
		names = append(names, name)
		fmt.Fprintf(&b, "\n[mcp.u%d]\ncmd = %q\nargs = [\"demo-upstream\", \"--name\", %q]\n", i, bin, name)
	}
	return b.String(), names
}

// sleepers is the config of n `sleep 100000` harnesses, not enabled.
func sleepers(n, stopGrace int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\n[harness.h%03d]\ncmd = \"sleep\"\nargs = [\"100000\"]\nstop_grace = %d\n", i, stopGrace)
	}
	return b.String()
}

// startFleet starts every harness (n of them) and waits until all run: the
// fleet part 1 measures its paths beside.
func (d *benchDaemon) startFleet(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	if _, err := d.cli(ctx, "start", "--all"); err != nil {
		return err
	}
	return d.waitRunning(ctx, n, 60*time.Second)
}

// spawnFloor starts n `sleep 100000` at once from this program (one
// goroutine each, as start --all starts units), then kills and reaps them
// all: how long each takes is the machine's floor under start --all and
// stop --all.
func spawnFloor(ctx context.Context, n int) (start, kill time.Duration, err error) {
	cmds, start, err := sleepsAtOnce(n, func(_ int, c *exec.Cmd) error { return c.Start() })
	return start, killAll(cmds, nil), err
}

// sleepsAtOnce makes n `sleep 100000` commands and starts each through
// start from a goroutine of its own, as start --all starts units; took is
// how long the starts took.
func sleepsAtOnce(n int, start func(i int, c *exec.Cmd) error) (cmds []*exec.Cmd, took time.Duration, err error) {
	cmds = make([]*exec.Cmd, n)
	errs := make(chan error, n)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range cmds {
		c := exec.Command("sleep", "100000")
		cmds[i] = c
		wg.Go(func() { errs <- start(i, c) })
	}
	wg.Wait()
	took = time.Since(t0)
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return cmds, took, err
}

// killAll kills and reaps every started command, one goroutine each, and
// then calls after (when not nil) with its index; it returns how long
// that took.
func killAll(cmds []*exec.Cmd, after func(i int)) time.Duration {
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, c := range cmds {
		if c.Process != nil {
			wg.Go(func() {
				_ = c.Process.Kill()
				_ = c.Wait()
				if after != nil {
					after(i)
				}
			})
		}
	}
	wg.Wait()
	return time.Since(t0)
}

// cgroupSpawnFloor is spawnFloor with the cgroups a daemon's run gets:
// each sleep started into a leaf of its own in a subtree made for it, as
// supervise does (NewRun with the default tasks_max, the v2 leaf by
// CLONE_INTO_CGROUP, and on a hybrid layout the spawning thread's joins of
// the v1 leaves and its way back, Group.Start). No PTY, no daemon. kill
// is the floor under stop --all likewise: every sleep killed and reaped
// and its cgroups removed once empty, as a run's end does. why says what
// was not measured when cgroups are not there to use.
func cgroupSpawnFloor(n int) (start, kill time.Duration, layout, why string, err error) {
	loc, err := cgroup.Locate()
	if err != nil {
		return 0, 0, "", err.Error(), nil
	}
	tr, err := cgroup.Create(loc, fmt.Sprintf("bench-floor-%d", os.Getpid()))
	if err != nil {
		return 0, 0, "", err.Error(), nil
	}
	defer func() {
		_, eerr := cgroup.End(tr.Dir(), time.Second)
		err = errors.Join(err, eerr, tr.Close())
	}()
	var v []string
	for _, c := range tr.ControllerStates() {
		if c.Version != "" {
			v = append(v, c.Name+" "+c.Version)
		}
	}
	layout = strings.Join(v, ", ")
	groups := make([]*cgroup.Group, n)
	for i := range groups {
		if groups[i], err = tr.NewRun(fmt.Sprintf("floor%d", i), 1, cgroup.Limits{TasksMax: config.DefaultTasksMax}); err != nil {
			return 0, 0, layout, "", err
		}
	}
	cmds, start, err := sleepsAtOnce(n, func(i int, c *exec.Cmd) error {
		g := groups[i]
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cgroup.SpawnInto(c.SysProcAttr, g.FD())
		return errors.Join(g.Start(c.Start), g.CloseFD())
	})
	removed := make([]error, n)
	kill = killAll(cmds, func(i int) {
		removed[i] = errors.Join(groups[i].WaitEmpty(nil), groups[i].Remove())
	})
	return start, kill, layout, "", errors.Join(append(removed, err)...)
}

// runFleet is parts 2 and 3 on one daemon carrying the whole fleet.
func runFleet(ctx context.Context, o options, bin, tmp string, rep *report) error {
	cfg, upNames := fleetConfig(o, bin, fmt.Sprintf("bench-fleet-%d", os.Getpid()))
	d, err := startDaemon(ctx, o, bin, tmp, "fleet", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.waitUpstreams(ctx, o.Upstreams); err != nil {
		return err
	}
	pid := d.info.PID
	p2 := fmt.Sprintf("2 (%d harnesses, %d upstreams)", o.Harnesses, o.Upstreams)
	if rss, _, err := rssKiB(pid); err == nil {
		rep.metric(p2, "daemon RSS, idle (all stopped)", "%.1f MiB", mib(rss))
	}

	// The floor under start --all and stop --all: as many sleepers
	// started (and killed) by this program, no daemon.
	o.progress("part 2: the spawn floor")
	spawnFloor, killFloor, err := spawnFloor(ctx, o.Harnesses)
	if err != nil {
		return err
	}
	rep.metric(p2, fmt.Sprintf("floor: %d `sleep` processes started at once by the bench (exec.Cmd.Start, no PTY) / killed and reaped", o.Harnesses), "%s / %s", us(spawnFloor), us(killFloor))
	// The same with the cgroups a run gets: what the kernel's serial work
	// (fork and exec, cgroup v1 joins) leaves for the daemon's own.
	o.progress("part 2: the spawn floor with cgroups")
	cgFloor, cgKillFloor, layout, why, err := cgroupSpawnFloor(o.Harnesses)
	if err != nil {
		return err
	}
	if why == "" {
		rep.metric(p2, fmt.Sprintf("floor: the same %d started into cgroups of their own as the daemon does (%s), no PTY / killed, reaped and their cgroups removed", o.Harnesses, layout), "%s / %s", us(cgFloor), us(cgKillFloor))
	} else {
		rep.metric(p2, "floor: the same started into cgroups of their own", "not measured: %s", why)
	}

	// start --all until every harness is running.
	o.progress("part 2: start --all")
	t0 := time.Now()
	if _, err := d.cli(ctx, "start", "--all"); err != nil {
		return err
	}
	cliDone := time.Since(t0)
	if err := d.waitRunning(ctx, o.Harnesses, 60*time.Second); err != nil {
		return err
	}
	allUp := time.Since(t0)
	rep.metric(p2, "`start --all`: CLI returned / all running (all running / the spawn floor)", "%s / %s (%.1fx)", us(cliDone), us(allUp), float64(allUp)/float64(spawnFloor))
	if why == "" {
		rep.metric(p2, "`start --all` all running / the spawn floor with cgroups", "%.2fx", float64(allUp)/float64(cgFloor))
	}
	time.Sleep(500 * time.Millisecond) // let the spawn burst settle before measuring RSS
	rss, _, err := rssKiB(pid)
	if err != nil {
		return err
	}
	rep.metric(p2, "daemon RSS, all running", "%.1f MiB", mib(rss))

	// Parts 2 and 3: list through the CLI, in process, and through MCP,
	// interleaved in rounds.
	o.progress("part 3: list latencies")
	bridge, err := d.bridgeSession(ctx, true)
	if err != nil {
		return err
	}
	defer bridge.Close()
	httpS, err := d.httpSession(ctx, false)
	if err != nil {
		return err
	}
	defer httpS.Close()
	var cliLat, helpLat, inLat, rawLat, mcpLat, httpLat []time.Duration
	const rounds = 5
	for r := range rounds {
		lat, err := timeN(o.ListRuns/rounds+boolInt(r < o.ListRuns%rounds), func() error {
			out, err := d.cli(ctx, "list", "--json")
			if err == nil && !json.Valid(out) {
				err = fmt.Errorf("list --json printed invalid JSON")
			}
			return err
		})
		if err != nil {
			return err
		}
		cliLat = append(cliLat, lat...)
		if lat, err = timeN(o.ListRuns/rounds+boolInt(r < o.ListRuns%rounds), func() error {
			_, err := d.cli(ctx, "--help")
			return err
		}); err != nil {
			return err
		}
		helpLat = append(helpLat, lat...)
		if lat, err = timeN(o.InprocRuns/rounds, func() error {
			var units []api.UnitInfo
			return d.ctl.Call(ctx, "list", struct{}{}, &units)
		}); err != nil {
			return err
		}
		inLat = append(inLat, lat...)
		// What `list --json` asks for: the answer's bytes, checked as
		// JSON but not decoded into rows (printListing).
		if lat, err = timeN(o.InprocRuns/rounds, func() error {
			var raw json.RawMessage
			return d.ctl.Call(ctx, "list", struct{}{}, &raw)
		}); err != nil {
			return err
		}
		rawLat = append(rawLat, lat...)
		for _, s := range []struct {
			sess *mcp.ClientSession
			lat  *[]time.Duration
		}{{bridge, &mcpLat}, {httpS, &httpLat}} {
			lat, err := timeN(o.MCPRuns/rounds, func() error {
				res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: "harness_list", Arguments: map[string]any{}})
				if err == nil && res.IsError {
					err = fmt.Errorf("harness_list: tool error %+v", res.Content)
				}
				return err
			})
			if err != nil {
				return err
			}
			*s.lat = append(*s.lat, lat...)
		}
	}
	cli, help, in, raw := summarize(cliLat), summarize(helpLat), summarize(inLat), summarize(rawLat)
	mc, ht := summarize(mcpLat), summarize(httpLat)
	rep.metric(p2, "`harness list --json` via CLI (new process each), p50 / p99 / max", "%s / %s / %s (n=%d)", us(cli.P50), us(cli.P99), us(cli.Max), cli.N)
	rep.metric(p2, "list via internal/client in process, decoded into rows, p50 / p99", "%s / %s (n=%d)", us(in.P50), us(in.P99), in.N)
	rep.metric(p2, "list via internal/client in process, the raw answer `list --json` prints, p50 / p99", "%s / %s (n=%d)", us(raw.P50), us(raw.P99), raw.N)
	rep.metric("3", "`harness_list` via `harness mcp` session, p50 / p99", "%s / %s (n=%d)", us(mc.P50), us(mc.P99), mc.N)
	rep.metric("3", "`harness_list` via HTTP session, p50 / p99", "%s / %s (n=%d)", us(ht.P50), us(ht.P99), ht.N)
	rep.metric("3", "`harness --help` (process start, no daemon), p50 / p99", "%s / %s (n=%d)", us(help.P50), us(help.P99), help.N)
	rep.metric("3", "CLI process start + handshake (CLI p50 - in-process p50)", "%s", us(cli.P50-in.P50))

	o.progress("part 2: the fleet page")
	if err := fleetPage(ctx, d, o.Harnesses, 20, rep, p2); err != nil {
		return fmt.Errorf("fleet page: %w", err)
	}

	// Process count: many sessions each call every upstream; the daemon
	// must still run one process per upstream.
	o.progress("part 2: %d sessions x %d upstreams, counting processes", o.FleetSess, o.Upstreams)
	closeAll, err := touchUpstreams(ctx, d, o)
	if err != nil {
		return err
	}
	procs := 0
	for _, n := range upNames {
		procs += countArg(n)
	}
	closeAll()
	rep.metric(p2, fmt.Sprintf("upstream processes while %d MCP sessions are open and have called all %d upstreams", o.FleetSess+2, o.Upstreams),
		"%d (naive one-per-harness-per-upstream: %d)", procs, o.Harnesses*o.Upstreams)
	rss2, hwm, err := rssKiB(pid)
	if err != nil {
		return err
	}
	rep.metric(p2, "daemon RSS after the list and MCP load / peak (VmHWM)", "%.1f MiB / %.1f MiB", mib(rss2), mib(hwm))

	// stop --all.
	o.progress("part 2: stop --all")
	t0 = time.Now()
	if _, err := d.cli(ctx, "stop", "--all"); err != nil {
		return err
	}
	cliStop := time.Since(t0)
	if err := d.waitRunning(ctx, 0, 60*time.Second); err != nil {
		return err
	}
	allDown := time.Since(t0)
	rep.metric(p2, fmt.Sprintf("`stop --all` (stop_grace = %d s): CLI returned / none running (none running / the kill floor)", o.StopGrace), "%s / %s (%.1fx)", us(cliStop), us(allDown), float64(allDown)/float64(killFloor))
	if why == "" {
		rep.metric(p2, "`stop --all` none running / the kill floor with cgroups", "%.2fx", float64(allDown)/float64(cgKillFloor))
	}

	worst := max(rss, rss2)
	rep.target(fmt.Sprintf("daemon RSS at %d harnesses < 80 MiB", o.Harnesses), worst < 80<<10, "%.1f MiB", mib(worst))
	rep.target("`harness list --json` p99 < 10 ms", cli.P99 < 10*time.Millisecond, "%s (in process %s; decoded %s)", us(cli.P99), us(raw.P99), us(in.P99))
	limit := time.Duration(o.StopGrace)*time.Second + 2*time.Second
	rep.target(fmt.Sprintf("`stop --all` <= stop_grace + 2 s = %s", limit), max(cliStop, allDown) <= limit, "%s", us(max(cliStop, allDown)))
	rep.target(fmt.Sprintf("%d upstreams make %d upstream processes", o.Upstreams, o.Upstreams), procs == o.Upstreams,
		"%d processes", procs)
	if o.Harnesses >= 1000 {
		// The 1,000-harness fleet's own targets.
		rep.target("1,000 harnesses: `start --all` until all run <= 2 s", allUp <= 2*time.Second, "%s", us(allUp))
		rep.target("1,000 harnesses: `stop --all` until none runs <= 0.5 s", allDown <= 500*time.Millisecond, "%s", us(allDown))
		rep.target("1,000 harnesses: `list --json` CLI median <= 25 ms, max <= 100 ms", cli.P50 <= 25*time.Millisecond && cli.Max <= 100*time.Millisecond,
			"%s / %s", us(cli.P50), us(cli.Max))
		rep.target("1,000 harnesses: daemon RSS <= 150 MiB", worst <= 150<<10, "%.1f MiB", mib(worst))
	}
	return nil
}

// waitRunning polls list until exactly want harnesses are running (or, for
// want 0, none is running or starting).
func (d *benchDaemon) waitRunning(ctx context.Context, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var units []api.UnitInfo
		if err := d.ctl.Call(ctx, "list", struct{}{}, &units); err != nil {
			return err
		}
		running, busy := 0, 0
		for _, u := range units {
			switch u.State {
			case "running":
				running++
			case "stopped", "exited", "failed", "degraded", "":
			default:
				busy++
			}
		}
		if running == want && (want > 0 || busy == 0) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d running (%d in transition), want %d, after %s", running, busy, want, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// touchUpstreams opens o.FleetSess bridge sessions at once and has each call
// the echo tool of every upstream. The sessions stay open until the
// returned func closes them.
func touchUpstreams(ctx context.Context, d *benchDaemon, o options) (func(), error) {
	var wg sync.WaitGroup
	errs := make([]error, o.FleetSess)
	sess := make([]*mcp.ClientSession, o.FleetSess)
	closeAll := func() {
		for _, s := range sess {
			if s != nil {
				_ = s.Close()
			}
		}
	}
	for i := range o.FleetSess {
		wg.Go(func() {
			s, err := d.bridgeSession(ctx, true)
			if err != nil {
				errs[i] = err
				return
			}
			sess[i] = s
			for u := range o.Upstreams {
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("u%d__echo", u), Arguments: map[string]any{"text": "x"}})
				if err == nil && res.IsError {
					err = fmt.Errorf("u%d__echo: tool error %+v", u, res.Content)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			closeAll()
			return nil, err
		}
	}
	return closeAll, nil
}

// timeN runs f n times and returns each run's duration.
func timeN(n int, f func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mib(kib int) float64 { return float64(kib) / 1024 }
