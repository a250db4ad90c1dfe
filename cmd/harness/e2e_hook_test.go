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
