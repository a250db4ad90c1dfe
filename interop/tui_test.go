//go:build interop

package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"

	"github.com/harness-dev/harness/internal/testenv"
)

// Real TUI agents from npm (pinned in tui/package-lock.json, installed by
// scripts/test), run as harnesses offline in a fresh HOME: what their
// first dialog looks like through `harness screen`, and what their
// activity entries keep of it. Claude Code, pinned there too,
// needs a model server to get past its start-up: agent_test.go runs it
// (and the other two) against internal/agent/modelapi.

// tuiBin is the executable of an agent installed in interop/tui.
func tuiBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(interopDir, "tui", "node_modules", ".bin", name)
	return testenv.File(t, p, name+" from interop/tui's npm packages (npm ci in interop/tui)")
}

// tuiScreen is the part of `harness screen --json` these tests read.
type tuiScreen struct {
	RunID     uint64   `json:"run_id"`
	AltScreen bool     `json:"alt_screen"`
	Activity  string   `json:"activity"`
	Lines     []string `json:"lines"`
}

func (s tuiScreen) String() string {
	return fmt.Sprintf("run %d, alt screen %v, %s:\n%s", s.RunID, s.AltScreen, s.Activity, strings.Join(s.Lines, "\n"))
}

// tuiFleet runs one agent as harness name in a fresh HOME and work
// directory (workdir: its base name), with events subscribed before it
// starts.
type tuiFleet struct {
	*fleet
	name   string
	home   string
	pkg    string // the agent's npm package
	events <-chan api.Event
}

func newTUIFleet(t *testing.T, name, pkg, workdir, bin string, args ...string) *tuiFleet {
	t.Helper()
	return newTUIFleetEnv(t, name, pkg, workdir, bin, func(home, _ string) string { return tuiEnv(home) }, args...)
}

// newTUIFleetEnv is newTUIFleet with the harness's env table made by env
// from the run's HOME and work directory (which exist by then).
func newTUIFleetEnv(t *testing.T, name, pkg, workdir, bin string, env func(home, work string) string, args ...string) *tuiFleet {
	t.Helper()
	return newTUIFleetEnvAt(t, t.TempDir(), name, pkg, workdir, bin, env, args...)
}

// newTUIFleetEnvAt is newTUIFleetEnv with the fleet's files under dir.
func newTUIFleetEnvAt(t *testing.T, dir, name, pkg, workdir, bin string, env func(home, work string) string, args ...string) *tuiFleet {
	t.Helper()
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, workdir)
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	f := newFleetAt(t, dir, fmt.Sprintf(`
[harness.%s]
cmd = %q
args = [%s]
workdir = %q
env = %s
stop_grace = 3
`, name, bin, strings.Join(quoted, ", "), work, env(home, work)))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.Dial(ctx, f.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tf := &tuiFleet{fleet: f, name: name, home: home, pkg: pkg, events: events}
	t.Cleanup(tf.checkNothingLeft)
	if _, errOut, code := f.Run("start", name); code != 0 {
		t.Fatalf("start %s: exit %d: %s", name, code, errOut)
	}
	return tf
}

// tuiEnv is the env table of a TUI agent under test: its own HOME, a
// colour terminal, and CI and GITHUB_ACTIONS set to "false". CI runners
// export them as "true" and harness passes the daemon's environment on;
// Gemini CLI then takes itself for headless (isHeadlessMode), skips its
// dialogs and exits asking for an auth method.
func tuiEnv(home string) string {
	return fmt.Sprintf("{ HOME = %q, TERM = \"xterm-256color\", CI = \"false\", GITHUB_ACTIONS = \"false\" }", home)
}

// settle returns the screen once the agent has drawn something, been
// idle for 3 s, and shows what ok wants. A start-up can be silent for
// seconds, and a silent run is idle too: so each round first waits for
// the agent's next change of activity (a busy or an idle event), then for
// quiet (harness wait). Idle events count too: what ok wants may be drawn
// within a busy spell that began before the caller last looked, and then
// the only event left is the idle one at its end (a CI run at load 20
// missed Claude Code's answer so). After two minutes it fails, showing
// the last screen.
func (tf *tuiFleet) settle(what string, ok func(tuiScreen) bool) tuiScreen {
	tf.T.Helper()
	deadline := time.After(2 * time.Minute)
	var last tuiScreen
	for {
		select {
		case ev, open := <-tf.events:
			if !open {
				tf.T.Fatalf("the event subscription ended; last screen %s", last)
			}
			if ev.Kind != api.EventActivity || ev.Unit != tf.name {
				continue
			}
		case <-deadline:
			tf.T.Fatalf("%s did not show %s within 2 minutes (its offline start-up changed?). Last screen: %s\nentries:\n%s",
				tf.name, what, last, strings.Join(tf.entries(), "\n"))
		}
		if out, errOut, code := tf.Run("wait", tf.name, "--idle", "3s", "--timeout", "60s"); code != 0 {
			tf.T.Fatalf("harness wait %s: exit %d\n%s%s\nscreen: %s", tf.name, code, out, errOut, tf.lastScreen())
		}
		if last = tf.screen(); ok(last) {
			return last
		}
	}
}

func (tf *tuiFleet) screen() tuiScreen {
	tf.T.Helper()
	var s tuiScreen
	tf.MustJSON(&s, "screen", tf.name)
	return s
}

// lastScreen is the screen for a failure message: its rows, or why there
// are none (an agent that exited has no screen), never a second failure
// that hides the first.
func (tf *tuiFleet) lastScreen() string {
	out, errOut, code := tf.Run("screen", tf.name)
	if code != 0 {
		return fmt.Sprintf("(none: screen exited %d: %s%s)\nlast log lines:\n%s", code, out, errOut, tf.logTail())
	}
	return out
}

// logTail is the agent's last log lines, or why there are none.
func (tf *tuiFleet) logTail() string {
	out, errOut, _ := tf.Run("logs", tf.name, "--lines", "20")
	return out + errOut
}

// entries is the text of the agent's output entries.
func (tf *tuiFleet) entries() []string {
	tf.T.Helper()
	var s struct {
		Entries []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"entries"`
	}
	tf.MustJSON(&s, "logs", tf.name, "--lines", "5000")
	var out []string
	for _, e := range s.Entries {
		if e.Kind == "output" {
			out = append(out, e.Text)
		}
	}
	return out
}

// rowWith is the one screen row holding phrase, or "" if none or several do.
func rowWith(s tuiScreen, phrase string) string {
	var found []string
	for _, l := range s.Lines {
		if strings.Contains(l, phrase) {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// checkEntries: each phrase's screen row is one activity entry, exactly
// as the screen shows it, however many frames the raw output drew it in.
func (tf *tuiFleet) checkEntries(s tuiScreen, phrases []string) {
	tf.T.Helper()
	entries := tf.entries()
	raw := tf.mustRunRaw()
	for _, p := range phrases {
		row := rowWith(s, p)
		var holding []string
		for _, e := range entries {
			if strings.Contains(e, p) {
				holding = append(holding, e)
			}
		}
		// Programs place words with cursor moves: count the phrase's
		// longest word in the raw output as the times it was drawn.
		word := slices.MaxFunc(strings.Fields(p), func(a, b string) int { return len(a) - len(b) })
		frames := strings.Count(raw, word)
		tf.T.Logf("%q: its word %q drawn %d times; %d entries", p, word, frames, len(holding))
		if len(holding) != 1 || strings.TrimSpace(holding[0]) != strings.TrimSpace(row) {
			tf.T.Errorf("%q is drawn %d times and shown on the screen as %q; the entries holding it are %q, want that row once",
				p, frames, row, holding)
		}
	}
	if tf.T.Failed() {
		tf.T.Logf("all entries:\n%s", strings.Join(entries, "\n"))
	}
}

// mustRunRaw is the agent's raw output as `harness logs --raw` prints it.
func (tf *tuiFleet) mustRunRaw() string {
	tf.T.Helper()
	out, errOut, code := tf.Run("logs", tf.name, "--raw")
	if code != 0 {
		tf.T.Fatalf("logs --raw: exit %d: %s", code, errOut)
	}
	return out
}

// checkNothingLeft stops the daemon (which ends the agent's whole tree);
// then no process may run with the fleet's HOME, in its environment or
// its command line (Codex starts a background app-server daemon unless
// told --no-daemon). Other tests run the same programs at the same time,
// each with a HOME of its own: theirs are not counted, so a process is
// told by its HOME, not by the program it runs.
func (tf *tuiFleet) checkNothingLeft() {
	tf.Stop() // cleanups run last-in first-out: this one before the fleet's
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if strings.Contains(string(cmdline), tf.home) || strings.Contains(string(environ), "HOME="+tf.home+"\x00") {
				left = append(left, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tf.T.Errorf("%s left processes behind after the daemon stopped:\n%s", tf.name, strings.Join(left, "\n"))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTUI_GeminiFolderTrustDialog: Gemini CLI 0.61.0 starts offline with
// its folder-trust dialog; the screen shows it with its words intact and
// the entries hold each of its lines once.
func TestTUI_GeminiFolderTrustDialog(t *testing.T) {
	t.Parallel()
	tf := newTUIFleet(t, "gemini", "@google/gemini-cli", "work-gem", tuiBin(t, "gemini"))
	phrases := []string{"Do you trust the files in this folder?", "1. Trust folder (work-gem)", "2. Trust parent folder (", "3. Don't trust"}
	s := tf.settle("its folder-trust dialog", func(s tuiScreen) bool {
		for _, p := range phrases {
			if rowWith(s, p) == "" {
				return false
			}
		}
		return true
	})
	// The banner with the version is drawn above the dialog on a quiet
	// machine; on a loaded one Gemini CLI shows "Waiting for
	// authentication..." first and the dialog without the banner (seen in
	// two runs at load 20). So: a version it names is the pinned one.
	text := strings.Join(append(s.Lines, tf.entries()...), "\n")
	if m := regexp.MustCompile(`Gemini CLI v[0-9.]+`).FindAllString(text, -1); slices.ContainsFunc(m, func(v string) bool { return v != "Gemini CLI v0.61.0" }) {
		t.Errorf("the screen names %q, not the pinned v0.61.0: %s", m, s)
	}
	tf.checkEntries(s, phrases)
}

// TestTUI_CodexSignInChoices: Codex 0.169.0 (--no-daemon) starts offline
// with its sign-in choices, one per row, on the alternate screen; the
// entries hold each line once; nothing of it outlives the daemon.
func TestTUI_CodexSignInChoices(t *testing.T) {
	t.Parallel()
	tf := newTUIFleet(t, "codex", "@openai/codex", "work-codex", tuiBin(t, "codex"), "--no-daemon")
	choices := []string{"1. Sign in with ChatGPT", "2. Sign in with Device Code", "3. Sign in another way"}
	s := tf.settle("its sign-in choices", func(s tuiScreen) bool {
		for _, c := range choices {
			if rowWith(s, c) == "" {
				return false
			}
		}
		return true
	})
	// One per row: no row holds two choices, and each row is its choice
	// (with the selection mark on the first).
	for i, c := range choices {
		row := strings.TrimSpace(rowWith(s, c))
		if want := c; row != want && row != "> "+want {
			t.Errorf("choice %d's row is %q, want just %q", i+1, row, want)
		}
	}
	if !s.AltScreen {
		t.Errorf("Codex draws its dialog on the alternate screen: %s", s)
	}
	tf.checkEntries(s, append(choices, "Welcome to Codex", "Choose how you want to use Codex.", "Press enter to continue"))
}
