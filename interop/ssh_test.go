//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/sshtest"
	"github.com/harness-dev/harness/internal/testenv"
)

// TestTS_MCPThroughSSHServesTheRemoteFleet: an agent on a laptop whose
// MCP client is the TypeScript SDK runs `harness --host ssh://box mcp`
// (docs/design/remote.md): through a real OpenSSH server, whose keys run `harness
// bridge` as their forced command, it lists and calls the remote fleet's
// tools. An operator key's session sends keys that reach the remote
// program and stops a harness; a read key's session lists neither send
// nor stop, and a stop it calls anyway is not_permitted and changes
// nothing.
func TestTS_MCPThroughSSHServesTheRemoteFleet(t *testing.T) {
	f := newFleet(t, `
[harness.echo]
cmd = "sh"
args = ["-c", "echo remote-hello; while read l; do echo \"got:$l\"; done"]
enabled = true

[harness.idle]
cmd = "sleep"
args = ["100000"]
enabled = true
`)
	bridgeCmd := func(grant string) string {
		return fmt.Sprintf("%s --socket %s bridge --grant %s", harnessBin, f.Socket, grant)
	}
	testenv.File(t, sshtest.Sshd, "Debian's openssh-server")
	srv, err := sshtest.Start(t.TempDir(),
		sshtest.Key{Name: "operator", Command: bridgeCmd("read,write,input")},
		sshtest.Key{Name: "watcher", Command: bridgeCmd("read")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	overSSH := func(key string) map[string]any {
		return map[string]any{
			"type":    "stdio",
			"command": harnessBin,
			"args":    []string{"--host", srv.Host(), "mcp"},
			"env":     map[string]string{"HARNESS_SOCKET": "", "HARNESS_MCP_TOKEN": "", "HARNESS_HOST": "", "HARNESS_SSH_COMMAND": srv.SSHCommand(key)},
		}
	}
	states := func() map[string]string {
		var rows []struct{ Name, State string }
		f.MustJSON(&rows, "list")
		m := map[string]string{}
		for _, r := range rows {
			m[r.Name] = r.State
		}
		return m
	}
	f.WaitFor("echo and idle to run", 20*time.Second, func() bool {
		s := states()
		return s["echo"] == "running" && s["idle"] == "running"
	})

	c, steps := runTS(t,
		connectStep("op", overSSH("operator")),
		opStep("op", "listTools"),
		opStep("op", "callTool", "name", "harness_list", "args", map[string]any{}),
		opStep("op", "callTool", "name", "harness_send", "args", map[string]any{"name": "echo", "text": "typed-by-ts-over-ssh", "enter": true}),
		opStep("op", "callTool", "name", "harness_stop", "args", map[string]any{"name": "idle"}),
		connectStep("ro", overSSH("watcher")),
		opStep("ro", "listTools"),
		opStep("ro", "callTool", "name", "harness_describe", "args", map[string]any{"name": "echo"}),
		opStep("ro", "callTool", "name", "harness_stop", "args", map[string]any{"name": "echo"}),
	)
	toolNames := func(s step) []string {
		var listed struct{ Tools []tool }
		c.must(s, &listed)
		var out []string
		for _, tl := range listed.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	result := func(s step) toolResult {
		var r toolResult
		c.must(s, &r)
		return r
	}
	var conn struct {
		ServerInfo struct{ Name string } `json:"serverInfo"`
	}
	c.must(steps[0], &conn)
	if conn.ServerInfo.Name == "" {
		t.Errorf("connect: no server info\n%s", c.transcript())
	}
	if got := toolNames(steps[1]); !slices.Contains(got, "harness_list") || !slices.Contains(got, "harness_send") || !slices.Contains(got, "harness_stop") {
		t.Fatalf("an operator key's session lists %v", got)
	}
	var listed struct {
		Harnesses []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"harnesses"`
	}
	if r := result(steps[2]); r.IsError || json.Unmarshal(r.StructuredContent, &listed) != nil || len(listed.Harnesses) != 2 {
		t.Fatalf("harness_list through SSH: %s\n%s", r.StructuredContent, c.transcript())
	}
	for _, h := range listed.Harnesses {
		if (h.Name != "echo" && h.Name != "idle") || h.State != "running" {
			t.Errorf("harness_list row %+v", h)
		}
	}
	if r := result(steps[3]); r.IsError {
		t.Fatalf("harness_send through SSH: %s", r.text())
	}
	f.WaitFor("the keys sent over SSH to reach the remote program", 10*time.Second, func() bool {
		out, _, _ := f.Run("logs", "echo", "--raw")
		return strings.Contains(out, "got:typed-by-ts-over-ssh")
	})
	if r := result(steps[4]); r.IsError {
		t.Fatalf("harness_stop with the operator key: %s", r.text())
	}

	if got := toolNames(steps[6]); !slices.Contains(got, "harness_list") || slices.Contains(got, "harness_send") || slices.Contains(got, "harness_stop") {
		t.Fatalf("a read key's session lists %v: want the read tools only", got)
	}
	if r := result(steps[7]); r.IsError || !strings.Contains(string(r.StructuredContent), `"echo"`) {
		t.Fatalf("harness_describe with a read key: %s %s", r.text(), r.StructuredContent)
	}
	r := result(steps[8])
	var body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(r.StructuredContent, &body)
	if !r.IsError || body.Code != "not_permitted" {
		t.Fatalf("harness_stop with a read key: %s %s\n%s", r.text(), r.StructuredContent, c.transcript())
	}
	if s := states(); s["echo"] != "running" || s["idle"] != "stopped" {
		t.Errorf("after the calls: %v, want echo running (the read key's stop refused) and idle stopped", s)
	}
}
