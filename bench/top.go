package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/tui/top"
)

// runTop is part 5: `harness top` in a real terminal (tmux, 120x40)
// against a daemon with o.Harnesses running harnesses. It measures how
// long a state change takes to reach the screen, and the CPU the
// dashboard and the daemon spend while nothing happens, next to the same
// window of a client that re-lists every second (`harness list --json`,
// the polling a dashboard without events would do).
func runTop(ctx context.Context, o options, bin, tmp string, rep *report) error {
	if _, err := exec.LookPath("tmux"); err != nil {
		return fmt.Errorf("part 5 runs harness top in tmux: %w", err)
	}
	o.Upstreams = min(o.Upstreams, 2)
	cfg, _ := fleetConfig(o, bin, fmt.Sprintf("bench-top-%d", os.Getpid()))
	d, err := startDaemon(ctx, o, bin, tmp, "top", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if _, err := d.cli(ctx, "start", "--all"); err != nil {
		return err
	}
	if err := d.waitRunning(ctx, o.Harnesses, 60*time.Second); err != nil {
		return err
	}
	p5 := fmt.Sprintf("5 (`harness top`, %d harnesses, 120x40)", o.Harnesses)
	tm, err := startTopPane(d, filepath.Join(d.dir, "tmux.sock"))
	if err != nil {
		return err
	}
	defer tm.close()
	want := fmt.Sprintf("%d harnesses, %d running", o.Harnesses, o.Harnesses)
	if _, err := tm.wait(want, 30*time.Second); err != nil {
		return err
	}
	topPID, err := tm.panePID()
	if err != nil {
		return err
	}

	// State change to screen: stop and start the last harness through
	// the socket, timing each until its row shows the new state.
	o.progress("part 5: state change to screen, %d samples", o.TopSamples)
	name := fmt.Sprintf("h%03d", o.Harnesses-1)
	if _, err := tm.send("End"); err != nil { // put it on screen (and select it)
		return err
	}
	var lat, opLat []time.Duration
	for i := range o.TopSamples {
		op, state := api.OpStop, "stopped"
		if i%2 == 1 {
			op, state = api.OpStart, "running"
		}
		t0 := time.Now()
		if err := d.ctl.Call(ctx, op, api.NamesArgs{Names: []string{name}}, nil); err != nil {
			return err
		}
		// The daemon publishes the new state before it answers: time
		// from the answer, as a user who ran `harness stop` would.
		t1 := time.Now()
		if _, err := tm.waitRow(name, state, 10*time.Second); err != nil {
			return err
		}
		lat, opLat = append(lat, time.Since(t1)), append(opLat, t1.Sub(t0))
	}
	st, ost := summarize(lat), summarize(opLat)
	rep.metric(p5, "state change to the row on screen, from the stop/start's answer (capture-pane every 2 ms), p50 / p99", "%s / %s (n=%d)", us(st.P50), us(st.P99), st.N)
	rep.metric(p5, "the stop/start call itself, p50 / p99", "%s / %s", us(ost.P50), us(ost.P99))
	rep.target("`harness top` shows a state change within 500 ms (p99)", st.P99 < 500*time.Millisecond, "%s", us(st.P99))

	// Idle: nothing changes for o.TopIdle. The selection is a stopped
	// harness (no preview to follow), then a running one (its preview
	// looks for new output once a second).
	if o.TopSamples%2 == 0 { // else the last sample stopped it already
		if err := d.ctl.Call(ctx, api.OpStop, api.NamesArgs{Names: []string{name}}, nil); err != nil {
			return err
		}
	}
	if _, err := tm.waitRow(name, "stopped", 10*time.Second); err != nil {
		return err
	}
	idle := func(label string) (top, daemon time.Duration) {
		o.progress("part 5: idle %s for %s", label, o.TopIdle)
		time.Sleep(300 * time.Millisecond) // let the last answers land
		t0, d0 := procCPU(topPID), procCPU(d.pid())
		time.Sleep(o.TopIdle)
		t1, d1 := procCPU(topPID), procCPU(d.pid())
		return t1 - t0, d1 - d0
	}
	pct := func(cpu time.Duration) float64 { return 100 * float64(cpu) / float64(o.TopIdle) }
	topStopped, dStopped := idle("with a stopped harness selected")
	if _, err := tm.send("Home"); err != nil { // h000, running
		return err
	}
	if _, err := tm.wait("preview of h000 (running)", 10*time.Second); err != nil {
		return err
	}
	topRunning, dRunning := idle("with a running harness selected")

	// What a process that only keeps bubbletea's frame clock costs: a Go
	// ticker at top's frame rate (this program in -serve-ticker mode).
	o.progress("part 5: a bare %d Hz ticker for %s", top.DefaultFPS, o.TopIdle)
	tick, err := tickerCPU(ctx, top.DefaultFPS, o.TopIdle)
	if err != nil {
		return err
	}

	// Baseline, same window: re-list once a second through the CLI.
	o.progress("part 5: baseline, `harness list --json` every second for %s", o.TopIdle)
	var cliCPU time.Duration
	d0 := procCPU(d.pid())
	start := time.Now()
	for i := 0; time.Since(start) < o.TopIdle; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second)); wait > 0 {
			time.Sleep(wait)
		}
		cmd := exec.CommandContext(ctx, d.bin, "--socket", d.socket, "list", "--json")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("baseline list: %w", err)
		}
		cliCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	time.Sleep(time.Until(start.Add(o.TopIdle)))
	dPoll := procCPU(d.pid()) - d0

	rep.metric(p5, fmt.Sprintf("idle %s, stopped harness selected: CPU of top / daemon", o.TopIdle), "%s (%.2f%% of a core) / %s", us(topStopped), pct(topStopped), us(dStopped))
	rep.metric(p5, fmt.Sprintf("idle %s, running harness selected (preview polled 1/s): CPU of top / daemon", o.TopIdle), "%s (%.2f%% of a core) / %s", us(topRunning), pct(topRunning), us(dRunning))
	rep.metric(p5, fmt.Sprintf("baseline: `harness list --json` every second for %s: CPU of the CLI processes / daemon", o.TopIdle), "%s / %s", us(cliCPU), us(dPoll))
	rep.metric(p5, "idle CPU, top + daemon, vs the baseline's CLI + daemon (stopped / running selection)", "%s / %s",
		ratio(float64(topStopped+dStopped), float64(cliCPU+dPoll)), ratio(float64(topRunning+dRunning), float64(cliCPU+dPoll)))
	rep.metric(p5, fmt.Sprintf("a Go process doing nothing but a %d Hz ticker (top's frame clock), same window; top (stopped selection) vs it", top.DefaultFPS),
		"%s; %s", us(tick), ratio(float64(topStopped), float64(tick)))
	rep.target("`harness top` idle CPU < 1% of a core (running selection)", pct(topRunning) < 1, "%.2f%%", pct(topRunning))
	return nil
}

// tickerCPU runs this program in -serve-ticker mode for d and returns the
// CPU it used.
func tickerCPU(ctx context.Context, fps int, d time.Duration) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, self, "-serve-ticker", fmt.Sprint(fps))
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	time.Sleep(300 * time.Millisecond) // past the runtime's start-up
	c0 := procCPU(cmd.Process.Pid)
	time.Sleep(d)
	used := procCPU(cmd.Process.Pid) - c0
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return used, nil
}

// serveTicker is the hidden -serve-ticker mode: a ticker at fps and
// nothing else, until killed.
func serveTicker(fps string) {
	n, err := strconv.Atoi(fps)
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "bench: -serve-ticker wants a rate")
		os.Exit(2)
	}
	for range time.Tick(time.Second / time.Duration(n)) {
	}
}

// topPane is `harness top` as the only program of a tmux session.
type topPane struct {
	sock string
}

func startTopPane(d *benchDaemon, sock string) (*topPane, error) {
	t := &topPane{sock: sock}
	_, err := t.tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "top",
		fmt.Sprintf("%s --socket %s top", d.bin, d.socket))
	return t, err
}

func (t *topPane) tmux(args ...string) (string, error) {
	c := exec.Command("tmux", append([]string{"-S", t.sock}, args...)...)
	c.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %v: %v: %s", args, err, out)
	}
	return string(out), nil
}

func (t *topPane) send(keys ...string) (string, error) {
	return t.tmux(append([]string{"send-keys", "-t", "top"}, keys...)...)
}

func (t *topPane) panePID() (int, error) {
	out, err := t.tmux("display-message", "-p", "-t", "top", "#{pane_pid}")
	if err != nil {
		return 0, err
	}
	var pid int
	_, err = fmt.Sscan(out, &pid)
	return pid, err
}

// wait polls the screen until it shows text.
func (t *topPane) wait(text string, limit time.Duration) (string, error) {
	return t.waitFor(text, limit, func(s string) bool { return strings.Contains(s, text) })
}

// waitRow polls the screen until the row of name shows state.
func (t *topPane) waitRow(name, state string, limit time.Duration) (string, error) {
	return t.waitFor(name+" "+state, limit, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == name {
				return f[1] == state
			}
		}
		return false
	})
}

func (t *topPane) waitFor(what string, limit time.Duration, cond func(string) bool) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		s, err := t.tmux("capture-pane", "-p", "-t", "top")
		if err != nil {
			return "", err
		}
		if cond(s) {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, errors.New("timed out waiting for " + what + " on the top screen:\n" + s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// close quits top with q and ends the tmux server.
func (t *topPane) close() {
	_, _ = t.send("q")
	_, _ = t.tmux("kill-server")
}

// procCPU is the CPU time pid's threads have used, in nanoseconds from
// /proc/PID/task/*/schedstat: /proc/PID/stat counts in 10 ms ticks, too
// coarse for an idle process over seconds. 0 if pid is gone.
func procCPU(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
