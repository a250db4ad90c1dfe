package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// The TUI fleet (part 2b): o.Harnesses harnesses that draw the way TUI
// agents do and then wait on their screen, as agents waiting for an
// answer do. Every PTY harness has a terminal emulator in the daemon
// (docs/design/terminals.md); this is what they cost. Half draw on the main screen
// (Gemini CLI: a banner that scrolls, then a box dialog redrawn in place
// with a spinner), half on the alternate screen (Codex: full-screen frames,
// cursor hidden).

// tuiFrames is how many times each child redraws its dialog.
const tuiFrames = 20

// serveTUI is the -serve-tui mode, the program of one TUI harness: MODE is
// main or alt. It draws, then sleeps until it is stopped.
func serveTUI(args []string) error {
	if len(args) != 1 || (args[0] != "main" && args[0] != "alt") {
		return fmt.Errorf("usage: -serve-tui main|alt")
	}
	drawTUI(os.Stdout, args[0], 50*time.Millisecond)
	time.Sleep(1 << 62)
	return nil
}

// drawTUI writes a TUI's start-up to w, one frame every pause.
func drawTUI(w io.Writer, mode string, pause time.Duration) {
	var b strings.Builder
	flush := func() {
		_, _ = io.WriteString(w, b.String())
		b.Reset()
	}
	spinner := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	if mode == "main" {
		// A banner in true colour that scrolls off the top.
		for i := range 60 {
			fmt.Fprintf(&b, "\x1b[38;2;%d;%d;200m▝▜▄\x1b[m %3d %s\r\n", 60+i*3, 200-i*2, i, strings.Repeat("tip ", 20))
		}
		flush()
		const boxRows = 12
		for f := range tuiFrames {
			if f > 0 {
				fmt.Fprintf(&b, "\x1b[%dA\r", boxRows)
			}
			fmt.Fprintf(&b, " ╭%s╮\r\n", strings.Repeat("─", 110))
			for r := range boxRows - 2 {
				text := ""
				switch r {
				case 1:
					text = spinner[f%len(spinner)] + " Do you trust the files in this folder?"
				case 3:
					text = "\x1b[32m●\x1b[m 1. Trust folder (work)"
				case 4:
					text = "  2. Trust parent folder (tmp)"
				case 5:
					text = "  3. Don't trust"
				}
				fmt.Fprintf(&b, " │ %s\x1b[%dG│\r\n", text, 113)
			}
			fmt.Fprintf(&b, " ╰%s╯\r\n", strings.Repeat("─", 110))
			flush()
			time.Sleep(pause)
		}
		return
	}
	b.WriteString("\x1b[?1049h\x1b[?25l")
	for f := range tuiFrames {
		b.WriteString("\x1b[H\x1b[2J")
		fmt.Fprintf(&b, "\x1b[2;3H\x1b[1mWelcome to the agent\x1b[m %s", spinner[f%len(spinner)])
		for i, s := range []string{"Sign in with an account", "Sign in with a device code", "Sign in another way"} {
			mark := " "
			if i == f%3 {
				mark = "\x1b[36m>\x1b[m"
			}
			fmt.Fprintf(&b, "\x1b[%d;3H%s %d. %s\x1b[%d;6H\x1b[2mwhat it means, in dim text\x1b[m", 5+3*i, mark, i+1, s, 6+3*i)
		}
		for y := 16; y < 38; y++ {
			fmt.Fprintf(&b, "\x1b[%d;1H\x1b[48;5;%dm%s\x1b[m", y, 232+y%20, strings.Repeat("·", 100))
		}
		b.WriteString("\x1b[39;3HPress enter to continue")
		flush()
		time.Sleep(pause)
	}
}

// tuiConfig is n TUI harnesses running this program in -serve-tui mode.
func tuiConfig(o options, exe string) string {
	var b strings.Builder
	for i := range o.Harnesses {
		mode := "main"
		if i%2 == 1 {
			mode = "alt"
		}
		fmt.Fprintf(&b, "\n[harness.t%03d]\ncmd = %q\nargs = [\"-serve-tui\", %q]\nidle_after = 1\nstop_grace = %d\n", i, exe, mode, o.StopGrace)
	}
	return b.String()
}

// runFleetTUI is part 2b: daemon RSS with o.Harnesses TUI harnesses, once
// each has drawn its dialog and gone idle on it.
func runFleetTUI(ctx context.Context, o options, bin, tmp string, rep *report) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	part := fmt.Sprintf("2b (%d TUI harnesses)", o.Harnesses)
	// The baseline: a daemon with no harness at all.
	empty, err := startDaemon(ctx, o, bin, tmp, "empty", "")
	if err != nil {
		return err
	}
	time.Sleep(time.Second)
	base, _, err := rssKiB(empty.info.PID)
	empty.close()
	if err != nil {
		return err
	}
	rep.metric(part, "daemon RSS without harnesses (baseline)", "%.1f MiB", mib(base))
	d, err := startDaemon(ctx, o, bin, tmp, "tui", tuiConfig(o, exe))
	if err != nil {
		return err
	}
	defer d.close()
	pid := d.info.PID
	stopped, err := settledRSS(pid)
	if err != nil {
		return err
	}
	rep.metric(part, "daemon RSS, all stopped", "%.1f MiB", mib(stopped))

	o.progress("part 2b: %d TUI harnesses draw their dialogs", o.Harnesses)
	t0 := time.Now()
	if _, err := d.cli(ctx, "start", "--all"); err != nil {
		return err
	}
	if err := d.waitTUISettled(ctx, o.Harnesses, 3*time.Minute); err != nil {
		return err
	}
	rep.metric(part, "start --all until every harness drew and went idle", "%s", us(time.Since(t0)))
	rss, err := settledRSS(pid)
	if err != nil {
		return err
	}
	_, hwm, _ := rssKiB(pid)
	if o.ProfileDir != "" {
		if err := d.heapProfile(o.ProfileDir, "tui"); err != nil {
			return err
		}
	}
	per := float64(rss-base) / float64(o.Harnesses)
	rep.metric(part, "daemon RSS, every harness idle on its dialog / peak (VmHWM)", "%.1f MiB / %.1f MiB", mib(rss), mib(hwm))
	rep.metric(part, "daemon RSS per TUI harness ((all idle - baseline) / harnesses)", "%.0f KiB", per)
	if o.IdleRSS > 0 {
		o.progress("part 2b: following the idle daemon's RSS for %s", o.IdleRSS)
		least, last, err := followRSS(pid, o.IdleRSS)
		if err != nil {
			return err
		}
		rep.metric(part, fmt.Sprintf("daemon RSS over the next %s of idling: lowest / at the end", o.IdleRSS), "%.1f MiB / %.1f MiB", mib(least), mib(last))
	}

	var s api.Screen
	if err := d.ctl.Call(ctx, api.OpScreen, api.ScreenArgs{Name: "t001"}, &s); err != nil {
		return err
	}
	if !s.AltScreen || !strings.Contains(strings.Join(s.Lines, "\n"), "Press enter to continue") {
		return fmt.Errorf("t001's screen does not show its dialog: %+v", s)
	}

	o.progress("part 2b: stop --all")
	if _, err := d.cli(ctx, "stop", "--all"); err != nil {
		return err
	}
	if err := d.waitRunning(ctx, 0, 60*time.Second); err != nil {
		return err
	}
	rep.target(fmt.Sprintf("daemon RSS at %d TUI harnesses < 80 MiB", o.Harnesses), rss < 80<<10,
		"%.1f MiB (%.0f KiB per harness)", mib(rss), per)
	return nil
}

// settledRSS is the daemon's RSS once the GC has returned what a burst
// (building 200 emulators, 200 programs drawing) freed: the lowest of ten
// readings over five seconds.
func settledRSS(pid int) (int, error) {
	least, _, err := sampleRSS(pid, 500*time.Millisecond, 10)
	return least, err
}

// followRSS reads the daemon's RSS every 5 s for d and returns the lowest
// reading and the last: what an idle daemon keeps once the runtime's own
// collections (at least every 2 minutes) and scavenger have run.
func followRSS(pid int, d time.Duration) (least, last int, err error) {
	return sampleRSS(pid, 5*time.Second, max(int(d/(5*time.Second)), 1))
}

// sampleRSS reads the daemon's RSS n times, every gap, and returns the
// lowest reading and the last.
func sampleRSS(pid int, gap time.Duration, n int) (least, last int, err error) {
	for i := range n {
		time.Sleep(gap)
		if last, _, err = rssKiB(pid); err != nil {
			return 0, 0, err
		}
		if i == 0 || last < least {
			least = last
		}
	}
	return least, last, nil
}

// waitTUISettled polls until every TUI harness is idle with its dialog on
// the screen. (A harness that has not printed yet is idle too, so the
// screen says whether it drew; polling, because 200 harnesses turning
// busy at once overflow a subscriber's event buffer.)
func (d *benchDaemon) waitTUISettled(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	settled := map[string]bool{}
	for {
		var units []api.UnitInfo
		if err := d.ctl.Call(ctx, api.OpList, struct{}{}, &units); err != nil {
			return err
		}
		for _, u := range units {
			if settled[u.Name] || u.State != "running" || u.Activity != api.ActivityIdle {
				continue
			}
			var s api.Screen
			if err := d.ctl.Call(ctx, api.OpScreen, api.ScreenArgs{Name: u.Name}, &s); err != nil {
				return err
			}
			text := strings.Join(s.Lines, "\n")
			if strings.Contains(text, "Press enter to continue") || strings.Contains(text, "3. Don't trust") {
				settled[u.Name] = true
			}
		}
		if len(settled) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d TUI harnesses idle on their dialogs after %s", len(settled), n, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// heapProfile has an in-process daemon (-cpuprofile mode) write its heap
// profile to dir/name.heap.pprof (SIGUSR1, see serveDaemon) and waits for it.
func (d *benchDaemon) heapProfile(dir, name string) error {
	path := filepath.Join(dir, name+".heap.pprof")
	_ = os.Remove(path)
	if err := d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	for range 100 {
		if st, err := os.Stat(path + ".done"); err == nil && st.Size() >= 0 {
			return os.Remove(path + ".done")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no heap profile at %s", path)
}
