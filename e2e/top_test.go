//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/testenv"
)

// tmuxPane is one tmux session on a private server, running a shell: the
// terminal a user would run `harness top` in.
type tmuxPane struct {
	t    *testing.T
	sock string
}

// newTmux starts a detached tmux server with one session of width x
// height running sh, whose prompt is "$ ". scripts/test installs tmux.
func newTmux(t *testing.T, width, height int) *tmuxPane {
	t.Helper()
	testenv.Program(t, "tmux")
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-s", "top",
		"env PS1='$ ' HARNESS_SOCKET= HARNESS_MCP_TOKEN= sh")
	t.Cleanup(func() {
		// Ends the shell and whatever runs in it (SIGHUP), top included.
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
	})
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	c := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...)
	// A UTF-8 locale, so that tmux keeps the dashboard's box and ellipsis
	// characters as they are drawn.
	c.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := c.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends tmux key names ("Down", "Escape", "Enter") or literal text.
func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", "top"}, keys...)...)
}

// typeLine types text literally and presses Enter.
func (p *tmuxPane) typeLine(text string) {
	p.tmux("send-keys", "-t", "top", "-l", text)
	p.keys("Enter")
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-t", "top") }

// waitScreen polls the pane until cond holds and returns that screen.
func (p *tmuxPane) waitScreen(what string, d time.Duration, cond func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := p.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for %s; screen:\n%s", d, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitText waits until the pane shows text.
func (p *tmuxPane) waitText(text string, d time.Duration) string {
	p.t.Helper()
	return p.waitScreen(fmt.Sprintf("%q on screen", text), d, func(s string) bool { return strings.Contains(s, text) })
}

// rowState is the STATE cell of the table row of name ("" without one).
func rowState(screen, name string) string { return rowCell(screen, name, 1) }

// rowCell is the i-th word of the table row of name ("" without one).
func rowCell(screen, name string, i int) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > i && f[0] == name {
			return f[i]
		}
	}
	return ""
}

// waitRow waits until the row of name shows state.
func (p *tmuxPane) waitRow(name, state string, d time.Duration) string {
	p.t.Helper()
	return p.waitScreen(name+" shown "+state, d, func(s string) bool { return rowState(s, name) == state })
}

// altScreen reports whether the pane is in the alternate screen.
func (p *tmuxPane) altScreen() bool {
	return strings.TrimSpace(p.tmux("display-message", "-p", "-t", "top", "#{alternate_on}")) == "1"
}

// startTop runs `harness top` in the pane against f, with the shell
// printing top's exit status when it ends.
func (p *tmuxPane) startTop(f *fleet) {
	p.typeLine(fmt.Sprintf("%s --socket %s top; echo top-exit=$?", harnessBin, f.Socket))
}

// topRunRow is the part of a `harness runs --json` row the top tests read.
type topRunRow struct {
	ID    uint64 `json:"id"`
	Cause string `json:"cause"`
}

// runsOf is `harness runs NAME --json`, oldest first.
func runsOf(f *fleet, name string) []topRunRow {
	var rs []topRunRow
	f.MustJSON(&rs, "runs", name)
	return rs
}

const topFleet = `
[harness.alpha]
cmd = "sh"
args = ["-c", "echo alpha-is-ready; exec sleep 100000"]
enabled = true
description = "the first one"
idle_after = 1

[harness.beta]
cmd = "sh"
args = ["-c", "echo beta-says-hi; exec sleep 100000"]
enabled = true
stop_grace = 2

[harness.gamma]
cmd = "sleep"
args = ["100000"]

[harness.job]
cmd = "sh"
args = ["-c", "echo job-ran"]
schedule = "@every 1h"
`

// TestTop_DashboardShowsAndDrivesTheFleet drives `harness top` in a real
// terminal (tmux) against a real daemon: the table lists the fleet with
// the right states, a stop from another shell shows within a second, the
// selection's output shows in the preview and the logs view, s/x/r change
// state as the CLI verbs would, a refusal shows its code, / filters, and q
// gives the shell back.
func TestTop_DashboardShowsAndDrivesTheFleet(t *testing.T) {
	f := newFleet(t, topFleet+fmt.Sprintf("\n[mcp.tools]\ncmd = %q\nargs = [\"demo-upstream\"]\n", harnessBin))
	f.waitState("alpha", "running")
	f.waitState("beta", "running")
	p := newTmux(t, 120, 40)
	p.startTop(f)

	s := p.waitScreen("the fleet with its tools", 15*time.Second, func(s string) bool {
		return rowState(s, "alpha") == "running" && strings.Contains(s, "tools")
	})
	for name, state := range map[string]string{"alpha": "running", "beta": "running", "gamma": "stopped", "job": "stopped", "mcp.tools": "running"} {
		if got := rowState(s, name); got != state {
			t.Errorf("row %s shows %q, want %q; screen:\n%s", name, got, state, s)
		}
	}
	if !p.altScreen() {
		t.Error("the dashboard is not on the alternate screen")
	}
	// The job's next fire, as `harness list` knows it.
	var jobs []struct {
		Name     string    `json:"name"`
		NextFire time.Time `json:"next_fire"`
	}
	f.MustJSON(&jobs, "jobs")
	// top shows a time of day, with the date when the fire is not today
	// (a run just before midnight schedules into tomorrow).
	if len(jobs) != 1 || !(strings.Contains(s, jobs[0].NextFire.Local().Format("15:04:05")) ||
		strings.Contains(s, jobs[0].NextFire.Local().Format("Jan 2 15:04"))) {
		t.Errorf("job's next fire %v not on screen:\n%s", jobs, s)
	}

	// The selection starts on the first row, and the preview shows it.
	p.waitText("alpha-is-ready", 5*time.Second)
	p.waitText("preview of alpha (running)", time.Second)

	// A stop from another shell shows within a second of its return.
	f.MustRun("stop", "beta")
	stopped := time.Now()
	p.waitRow("beta", "stopped", 5*time.Second)
	if took := time.Since(stopped); took > time.Second {
		t.Errorf("stopped showed %s after harness stop returned, want within 1s", took)
	} else {
		t.Logf("stopped showed %s after harness stop returned", took)
	}

	// Select beta: its preview.
	p.keys("Down")
	p.waitText("preview of beta (stopped)", 5*time.Second)
	p.waitText("beta-says-hi", 5*time.Second)

	// s, x, r do what harness start, stop, restart do.
	before := len(runsOf(f, "beta"))
	p.keys("s")
	p.waitText("start beta: running", 10*time.Second)
	f.waitState("beta", "running")
	p.waitRow("beta", "running", 5*time.Second)
	if rs := runsOf(f, "beta"); len(rs) != before+1 || rs[len(rs)-1].Cause != "manual" {
		t.Errorf("runs after s: %+v, want one more, cause manual as `harness start` makes", rs)
	}
	p.keys("x")
	p.waitText("stop beta: stopped", 10*time.Second)
	if u := f.unit("beta"); u.State != "stopped" || u.Enabled {
		t.Errorf("after x: %+v, want stopped and not enabled, as `harness stop` leaves it", u)
	}
	p.waitRow("beta", "stopped", 5*time.Second)
	p.keys("r")
	p.waitText("restart beta: running", 10*time.Second)
	f.waitState("beta", "running")
	p.waitRow("beta", "running", 5*time.Second)

	// Activity: a restart from another shell makes alpha busy (it prints),
	// then idle a second later (idle_after = 1), with how long.
	f.MustRun("restart", "alpha")
	p.waitScreen("alpha busy", 5*time.Second, func(s string) bool { return rowCell(s, "alpha", 2) == "busy" })
	s = p.waitScreen("alpha idle", 5*time.Second, func(s string) bool { return rowCell(s, "alpha", 2) == "idle" })
	if secs := rowCell(s, "alpha", 3); !strings.HasSuffix(secs, "s") {
		t.Errorf("alpha idle for %q, want seconds; screen:\n%s", secs, s)
	}

	// A refusal: alpha is not a job.
	p.keys("Up", "t")
	s = p.waitText("trigger alpha refused: not_a_job", 5*time.Second)

	// The filter, then the logs and runs views of the selection.
	p.keys("/", "gam")
	s = p.waitScreen("only gamma", 5*time.Second, func(s string) bool {
		return rowState(s, "gamma") == "stopped" && rowState(s, "alpha") == ""
	})
	p.keys("Enter", "Escape")
	p.waitRow("alpha", "running", 5*time.Second)
	p.keys("g", "l")
	p.waitText("activity entries of alpha (running)", 5*time.Second)
	p.waitText("-- spawned", 5*time.Second)
	p.keys("h")
	p.waitText("runs of alpha", 5*time.Second)
	p.waitText("autostart", 5*time.Second)
	p.keys("Escape")
	p.waitText("preview of alpha", 5*time.Second)

	// q gives the shell back in the state it was in.
	p.keys("q")
	p.waitText("top-exit=0", 5*time.Second)
	if p.altScreen() {
		t.Error("still on the alternate screen after q")
	}
	p.typeLine("echo ok-$((40+2))")
	p.waitText("ok-42", 5*time.Second)
}

// TestTop_DaemonLossEndsTheDashboard: when the daemon goes away the
// dashboard ends, says so, exits non-zero and gives the terminal back.
func TestTop_DaemonLossEndsTheDashboard(t *testing.T) {
	f := newFleet(t, topFleet)
	f.waitState("alpha", "running")
	p := newTmux(t, 100, 30)
	p.startTop(f)
	p.waitRow("alpha", "running", 15*time.Second)
	f.Stop()
	s := p.waitText("top-exit=1", 15*time.Second)
	if !strings.Contains(s, "lost the connection to the daemon") || !strings.Contains(s, "daemon_unavailable") {
		t.Errorf("no clear message after the daemon went away:\n%s", s)
	}
	if p.altScreen() {
		t.Error("still on the alternate screen after the daemon went away")
	}
	p.typeLine("echo ok-$((2+2))")
	p.waitText("ok-4", 5*time.Second)
}

// TestTop_TwoHundredHarnessesIn80x24: 200 harnesses with long names and
// descriptions in an 80x24 terminal: every line in its place (title,
// heading, rows, preview, help), columns shrunk, nothing wrapped; the
// cursor reaches the last harness; a wider terminal gets more columns;
// Ctrl-C quits cleanly.
func TestTop_TwoHundredHarnessesIn80x24(t *testing.T) {
	var cfg strings.Builder
	for i := range 200 {
		fmt.Fprintf(&cfg, "[harness.agent-with-a-long-name-%03d]\ncmd = \"sleep\"\nargs = [\"100000\"]\n", i)
		fmt.Fprintf(&cfg, "description = \"number %d of a fleet too large for one screen, described at length\"\n", i)
	}
	f := newFleet(t, cfg.String())
	p := newTmux(t, 80, 24)
	p.startTop(f)
	s := p.waitText("200 harnesses", 15*time.Second)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) != 24 {
		t.Fatalf("%d lines on a 24-line screen:\n%s", len(lines), s)
	}
	if !strings.HasPrefix(lines[0], "harness top · 200 harnesses, 0 running") ||
		!strings.HasPrefix(lines[1], "NAME") || !strings.Contains(lines[1], "STATE") ||
		!strings.HasPrefix(lines[2], "agent-with-a-long-name-000") || rowState(s, "agent-with-a-long-name-000") != "stopped" ||
		!strings.Contains(lines[23], "q quit") {
		t.Fatalf("80x24 layout:\n%s", s)
	}
	if strings.Contains(lines[1], "PID") {
		t.Errorf("PID column kept in 80 columns:\n%s", s)
	}
	p.keys("End")
	s = p.waitText("preview of agent-with-a-long-name-199", 5*time.Second)
	if rowState(s, "agent-with-a-long-name-199") != "stopped" {
		t.Fatalf("last harness not on screen after End:\n%s", s)
	}
	p.tmux("resize-window", "-t", "top", "-x", "160", "-y", "40")
	s = p.waitScreen("wider columns", 5*time.Second, func(s string) bool {
		return strings.Contains(s, "PID") && strings.Contains(s, "DESCRIPTION")
	})
	if !strings.Contains(s, "of a fleet too large for one screen") {
		t.Errorf("descriptions not shown at 160 columns:\n%s", s)
	}
	p.keys("C-c") // Ctrl-C quits as q does
	p.waitText("top-exit=0", 5*time.Second)
	if p.altScreen() {
		t.Error("still on the alternate screen after Ctrl-C")
	}
}

// TestTop_RefusesWithoutTerminalOrDaemon: without a terminal, or without
// a daemon, top says why and exits 1 before touching the terminal.
func TestTop_RefusesWithoutTerminalOrDaemon(t *testing.T) {
	f := newFleet(t, topFleet)
	out, errOut, code := f.Run("top") // stdin and stdout are not terminals here
	if code != 1 || !strings.Contains(errOut, "harness top needs a terminal") || out != "" {
		t.Errorf("top without a terminal: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	p := newTmux(t, 100, 30)
	p.typeLine(fmt.Sprintf("%s --socket %s top; echo top-exit=$?", harnessBin, filepath.Join(t.TempDir(), "none.sock")))
	s := p.waitText("top-exit=1", 10*time.Second)
	if !strings.Contains(s, "daemon not running at") || p.altScreen() {
		t.Errorf("top without a daemon:\n%s", s)
	}
}

// TestTop_AttachAndSendFromTheDashboard: `i` types a line into the
// selected harness; `a` hands the terminal to `harness attach` (the
// program's screen, keys going to it) and Ctrl-] brings the dashboard
// back.
func TestTop_AttachAndSendFromTheDashboard(t *testing.T) {
	f := newFleet(t, `
[harness.echo]
cmd = "sh"
args = ["-c", "echo echo-ready; while read l; do echo \"got:$l\"; done"]
enabled = true
`)
	f.waitState("echo", "running")
	p := newTmux(t, 120, 40)
	p.startTop(f)
	p.waitRow("echo", "running", 15*time.Second)
	p.waitText("preview of echo", 5*time.Second)

	p.keys("i")
	p.tmux("send-keys", "-t", "top", "-l", "from-top")
	p.keys("Enter")
	f.WaitFor("the line typed from top to reach the harness", 10*time.Second, func() bool {
		return strings.Contains(f.MustRun("logs", "echo"), "got:from-top")
	})

	p.keys("a")
	p.waitScreen("the attached program's screen instead of the dashboard", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "got:from-top") && !strings.Contains(s, "preview of echo")
	})
	p.tmux("send-keys", "-t", "top", "-l", "typed-attached")
	p.keys("Enter")
	p.waitText("got:typed-attached", 10*time.Second)
	p.keys("C-]")
	p.waitText("preview of echo", 10*time.Second)
	p.waitText("detached from echo", 5*time.Second)
	if rowState(p.screen(), "echo") != "running" {
		t.Errorf("echo after detaching: %s", p.screen())
	}
	p.keys("q")
	p.waitText("top-exit=0", 5*time.Second)
}
