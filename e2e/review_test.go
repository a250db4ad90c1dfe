//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSSH writes a stand-in for ssh (HARNESS_SSH_COMMAND) that ignores
// its arguments and runs this fleet's bridge under grant, as a key's
// forced command would.
func (f *fleet) fakeSSH(grant string) string {
	f.T.Helper()
	p := filepath.Join(f.Dir, "ssh-"+strings.ReplaceAll(grant, ",", "-"))
	script := fmt.Sprintf("#!/bin/sh\nexec %s --socket %s bridge --grant %s\n", harnessBin, f.Socket, grant)
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		f.T.Fatal(err)
	}
	return p
}

// TestScenario_AWriteKeyCannotRunAnyCommand: `harness run` starts any
// program the caller names, which is more than starting or stopping the
// configured fleet; a bridge key granted read,write is refused it (it
// needs input, the class that may make a harness run anything), and a key
// with input may.
func TestScenario_AWriteKeyCannotRunAnyCommand(t *testing.T) {
	f := newFleet(t, "")
	marker := filepath.Join(t.TempDir(), "ran")
	remote := func(grant string) (string, string, int) {
		c := exec.Command(harnessBin, "--host", "ssh://remote", "run", "--detach", "--json", "--name", "x", "--", "sh", "-c", "touch "+marker+"; sleep 1000")
		c.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=", "HARNESS_SSH_COMMAND="+f.fakeSSH(grant))
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	out, errOut, code := remote("read,write")
	var e jsonError
	if code == 0 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Code != "not_permitted" || !strings.Contains(e.Error.Message, "needs input") {
		t.Fatalf("run through a read,write key: exit %d, %s%s; want not_permitted naming input", code, out, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused command ran")
	}
	if _, ok := f.listed("x"); ok {
		t.Fatal("the refused scratch harness is listed")
	}
	if out, errOut, code := remote("read,write,input"); code != 0 {
		t.Fatalf("run through a read,write,input key: exit %d, %s%s", code, out, errOut)
	}
	f.waitState("x", "running")
	f.MustRun("stop", "x")
}

// TestScenario_ASessionIDIsNeverAnOption: with resume = true, the session
// a run's hook named goes on the next run's command line. The hook's
// payload is the agent's to write, so a "session" that is an option
// (--dangerously-skip-permissions, which --resume's optional value lets
// through as a flag) must not reach the argv: it is not resumed.
func TestScenario_ASessionIDIsNeverAnOption(t *testing.T) {
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	script := filepath.Join(dir, "agent.sh")
	body := `#!/bin/sh
echo "run: $*" >> ` + argsFile + `
if [ ! -e ` + dir + `/once ]; then
  touch ` + dir + `/once
  "$HB" hook SessionStart '{"session_id":"--dangerously-skip-permissions"}'; echo "hook=$?"
fi
exec sleep 100
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.agent]
cmd = %q
agent = "claude-code"
mcp_wire = false
resume = true
env = { HB = %q, HOME = %q }
`, script, harnessBin, dir))
	f.MustRun("start", "agent")
	f.WaitFor("the hook call", 30*time.Second, func() bool {
		out, _, _ := f.Run("logs", "agent")
		return strings.Contains(out, "hook=")
	})
	f.MustRun("restart", "agent")
	var lines []string
	f.WaitFor("the second run", 30*time.Second, func() bool {
		b, _ := os.ReadFile(argsFile)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) >= 2
	})
	if strings.Contains(lines[1], "dangerously") {
		t.Fatalf("the hook's session reached the next run's argv as an option: %s", lines[1])
	}
}

// TestScenario_AgentTextReachesATerminalWithoutItsControls: what an agent
// wrote (its transcript's answers and tool inputs, a hook's notification
// message) is the model's text, which a page it read can steer; `harness
// turns` and `describe` print it to an operator's terminal, where an
// escape sequence would set the clipboard (OSC 52), retitle or redraw it.
// As in activity entries, the daemon hands it on without control
// sequences, its lines kept.
func TestScenario_AgentTextReachesATerminalWithoutItsControls(t *testing.T) {
	dir := t.TempDir()
	transcript := filepath.Join(dir, "t.jsonl")
	lines := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"list files\u001b]0;pwned\u0007"}}
{"type":"assistant","sessionId":"s1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"first line\nsecond \u001b]52;c;ZXZpbA==\u0007line\u001b[2J"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls \u001b[31mred"}}]}}
{"type":"assistant","sessionId":"s1","isApiErrorMessage":true,"message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"API Error \u001b[8mhidden"}]}}
`
	if err := os.WriteFile(transcript, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent.sh")
	body := `#!/bin/sh
"$HB" hook Notification '{"session_id":"s1","transcript_path":"` + transcript + `","notification_type":"permission_prompt","message":"Allow \u001b]52;c;ZXZpbA==\u0007this?"}'
exec sleep 100
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[harness.agent]
cmd = %q
agent = "claude-code"
mcp_wire = false
env = { HB = %q, HOME = %q }
`, script, harnessBin, dir))
	f.MustRun("start", "agent")
	f.MustRun("wait", "agent", "--state", "waiting", "--timeout", "30s")
	desc := f.MustRun("describe", "agent")
	if !strings.Contains(desc, "Allow") || strings.ContainsAny(desc, "\x1b\x07") {
		t.Errorf("describe prints the hook's message with its controls: %q", desc)
	}
	turns := f.MustRun("turns", "agent")
	for _, want := range []string{"first line", "second line", `"command":"ls`, "API Error hidden", "list files"} {
		if !strings.Contains(turns, want) {
			t.Errorf("turns lacks %q:\n%s", want, turns)
		}
	}
	if strings.ContainsAny(turns, "\x1b\x07") {
		t.Errorf("turns prints the transcript's controls: %q", turns)
	}
}
