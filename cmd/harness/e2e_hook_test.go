package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	f.mustRun("start", "agent")
	var out string
	f.waitFor("the hook calls", 30*time.Second, func() bool {
		out, _, _ = f.run("logs", "agent")
		return strings.Contains(out, "bad=")
	})
	if !strings.Contains(out, "good=0") || !strings.Contains(out, "bad=1") || !strings.Contains(out, "invalid_argument") {
		t.Errorf("hook calls from the run: %s", out)
	}
	var runs []struct {
		ID        uint64 `json:"id"`
		SessionID string `json:"session_id"`
	}
	f.mustJSON(&runs, "runs", "agent")
	if len(runs) != 1 || runs[0].SessionID != "s-e2e-1" {
		t.Errorf("runs %+v: want the hook's session on the run", runs)
	}
	if st := f.unit("agent"); st.State != "running" {
		t.Errorf("the harness after a bad hook call: %+v", st)
	}

	c := exec.Command(harnessBin, "--socket", f.socket, "hook", "Stop", "{}")
	c.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=not-a-live-token")
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(e.String(), "not_permitted") && !strings.Contains(e.String(), "token") {
		t.Errorf("a hook with a bogus token: %v, stdout %q stderr %q", err, o.String(), e.String())
	}
	f.waitFor("the refusal in the daemon log", 10*time.Second, func() bool {
		b, _ := os.ReadFile(f.logPath)
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
		f.mustRun("start", name)
		f.waitFor(name+"'s argv", 30*time.Second, func() bool {
			out, _, _ := f.run("logs", name)
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
	f.mustJSON(&d, "describe", "off")
	if d.Config.Hooks == nil || *d.Config.Hooks {
		t.Errorf("describe --json off: hooks %v, want false", d.Config.Hooks)
	}
	f.mustJSON(&d, "describe", "on")
	if d.Config.Hooks == nil || !*d.Config.Hooks {
		t.Errorf("describe --json on: hooks %v, want true", d.Config.Hooks)
	}
	if out := f.mustRun("describe", "off"); !strings.Contains(out, "hooks:          off") {
		t.Errorf("describe off (text) does not say its hooks are off:\n%s", out)
	}
}
