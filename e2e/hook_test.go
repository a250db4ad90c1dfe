//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fleettest"
)

// TestScenario_HookCallsAreAuthenticatedByTheRunsToken: `harness hook`
// inside a harness (its HARNESS_MCP_TOKEN) puts the session its payload
// names on the run; a payload that is not a JSON object is an error for
// that call only (the harness runs on); a call with a token that is not a
// live run's is refused (not_permitted) and logged.
func TestScenario_HookCallsAreAuthenticatedByTheRunsToken(t *testing.T) {
	// A script file: the hook wiring of claude-code puts --settings=… before
	// the harness's args, which the script ignores.
	script := filepath.Join(t.TempDir(), "agent.sh")
	body := "#!/bin/sh\n\"$HB\" hook UserPromptSubmit '{\"session_id\":\"s-e2e-1\"}'; echo \"good=$?\"; \"$HB\" hook Stop '[1]'; echo \"bad=$?\"; exec sleep 100\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.agent]
cmd = %q
agent = "claude-code"
mcp_wire = false
env = { HB = %q }
`, script, harnessBin))
	f.MustRun("start", "agent")
	var out string
	f.WaitFor("the hook calls", 30*time.Second, func() bool {
		out, _, _ = f.Run("logs", "agent")
		return strings.Contains(out, "bad=")
	})
	if !strings.Contains(out, "good=0") || !strings.Contains(out, "bad=1") || !strings.Contains(out, "invalid_argument") {
		t.Errorf("hook calls from the run: %s", out)
	}
	var runs []struct {
		ID        uint64 `json:"id"`
		SessionID string `json:"session_id"`
	}
	f.MustJSON(&runs, "runs", "agent")
	if len(runs) != 1 || runs[0].SessionID != "s-e2e-1" {
		t.Errorf("runs %+v: want the hook's session on the run", runs)
	}
	if st := f.unit("agent"); st.State != "running" {
		t.Errorf("the harness after a bad hook call: %+v", st)
	}

	c := exec.Command(harnessBin, "--socket", f.Socket, "hook", "Stop", "{}")
	c.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=not-a-live-token")
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(e.String(), "not_permitted") && !strings.Contains(e.String(), "token") {
		t.Errorf("a hook with a bogus token: %v, stdout %q stderr %q", err, o.String(), e.String())
	}
	f.WaitFor("the refusal in the daemon log", 10*time.Second, func() bool {
		b, _ := os.ReadFile(f.LogPath)
		return strings.Contains(string(b), "hook refused")
	})
}

// TestScenario_HooksFalseLeavesTheAgentsHooksOut: `hooks = false` on a
// harness of a known agent spawns it without the hook configuration
// harness installs (Claude Code's --settings, Codex's notify), while a
// harness without the key gets it; describe shows the switch.
func TestScenario_HooksFalseLeavesTheAgentsHooksOut(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"argv: $*\"\nexec sleep 100\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.on]
cmd = %[1]q
agent = "claude-code"
mcp_wire = false

[harness.off]
cmd = %[1]q
agent = "claude-code"
mcp_wire = false
hooks = false

[harness.codexon]
cmd = %[1]q
agent = "codex"
mcp_wire = false
env = { HOME = %[2]q }

[harness.codexoff]
cmd = %[1]q
agent = "codex"
mcp_wire = false
hooks = false
env = { HOME = %[2]q }
`, script, t.TempDir()))
	argv := map[string]string{}
	for _, name := range []string{"on", "off", "codexon", "codexoff"} {
		f.MustRun("start", name)
		f.WaitFor(name+"'s argv", 30*time.Second, func() bool {
			out, _, _ := f.Run("logs", name)
			argv[name] = out
			return strings.Contains(out, "argv:")
		})
	}
	if !strings.Contains(argv["on"], "--settings={") || !strings.Contains(argv["on"], " hook Stop") {
		t.Errorf("a claude-code harness without the key lacks its hooks: %s", argv["on"])
	}
	if !strings.Contains(argv["codexon"], "notify=[") || !strings.Contains(argv["codexon"], `"hook", "notify"]`) {
		t.Errorf("a codex harness without the key lacks its notify hook: %s", argv["codexon"])
	}
	for _, name := range []string{"off", "codexoff"} {
		if strings.Contains(argv[name], "--settings") || strings.Contains(argv[name], "hook") || strings.Contains(argv[name], "notify") {
			t.Errorf("%s has hooks = false but was given them: %s", name, argv[name])
		}
	}
	var d struct {
		Config struct {
			Hooks *bool `json:"hooks"`
		} `json:"config"`
	}
	f.MustJSON(&d, "describe", "off")
	if d.Config.Hooks == nil || *d.Config.Hooks {
		t.Errorf("describe --json off: hooks %v, want false", d.Config.Hooks)
	}
	f.MustJSON(&d, "describe", "on")
	if d.Config.Hooks == nil || !*d.Config.Hooks {
		t.Errorf("describe --json on: hooks %v, want true", d.Config.Hooks)
	}
	if out := f.MustRun("describe", "off"); !strings.Contains(out, "hooks:          off") {
		t.Errorf("describe off (text) does not say its hooks are off:\n%s", out)
	}
}

// TestScenario_GeminiWiringLeavesNothingBehind: the system settings file
// harness writes for a Gemini CLI harness (MCP server and hooks; Gemini
// reads it only on a root-only path, so the daemon runs as root here) is
// there while the harness is, and gone once a reload removed the harness
// and once the daemon stopped.
func TestScenario_GeminiWiringLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Gemini CLI reads a system settings file only when root owns its path: the daemon must run as root to wire it")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(home, ".cache"), "harness-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o022 != 0 {
			t.Skipf("%s is writable by others: Gemini CLI would not read a settings file below it", d)
		}
	}
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"settings=$GEMINI_CLI_SYSTEM_SETTINGS_PATH\"\nexec sleep 100\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fleet{Fleet: fleettest.NewFleet(t, harnessBin, dir, daemonEnv())}
	withGemini := fmt.Sprintf("[harness.keep]\ncmd = \"sleep\"\nargs = [\"100\"]\n\n[harness.g]\ncmd = %q\nagent = \"gemini\"\n", script)
	f.WriteConfig(withGemini)
	f.start()
	t.Cleanup(f.Stop)
	settings := filepath.Join(f.State, "agents", "g", "gemini-system-settings.json")
	started := func() {
		f.MustRun("start", "g")
		f.WaitFor("g's settings path", 30*time.Second, func() bool {
			out, _, _ := f.Run("logs", "g")
			return strings.Contains(out, "settings="+settings)
		})
		b, err := os.ReadFile(settings)
		if err != nil || !strings.Contains(string(b), `"mcpServers"`) || !strings.Contains(string(b), "hook AfterAgent") {
			t.Fatalf("the wiring of a running gemini harness: %s, %v", b, err)
		}
	}
	started()
	f.WriteConfig("[harness.keep]\ncmd = \"sleep\"\nargs = [\"100\"]\n")
	f.MustRun("reload")
	f.WaitFor("the removed harness's wiring to go", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Dir(settings))
		return os.IsNotExist(err)
	})
	f.WriteConfig(withGemini)
	f.MustRun("reload")
	started()
	// A reload that is refused (it declares a harness named like a
	// running scratch harness) leaves the wiring as it was: its hooks =
	// false must not reach g's next run.
	f.MustRun("run", "--name", "clash", "--detach", "--", "sleep", "100")
	f.WriteConfig(withGemini + "hooks = false\n\n[harness.clash]\ncmd = \"sleep\"\nargs = [\"100\"]\n")
	if out, errOut, code := f.Run("reload"); code == 0 {
		t.Fatalf("a reload declaring a running scratch harness's name was taken: %s%s", out, errOut)
	}
	if b, err := os.ReadFile(settings); err != nil || !strings.Contains(string(b), "hook AfterAgent") {
		t.Fatalf("a refused reload rewrote g's wiring: %s, %v", b, err)
	}
	f.MustRun("stop", "clash")
	f.Stop()
	if _, err := os.Stat(filepath.Join(f.State, "agents")); !os.IsNotExist(err) {
		t.Errorf("the daemon stopped and left %s behind (%v)", filepath.Join(f.State, "agents"), err)
	}
}
