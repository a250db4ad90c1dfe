//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

// lineReader is a harness that answers each line typed into its terminal
// with "got: LINE", after writing its MCP token to dir/NAME.token.
func lineReader(name, dir, extra string) string {
	script := fmt.Sprintf(`echo $HARNESS_MCP_TOKEN > %s; echo ready; while IFS= read -r l; do echo "got: $l"; done`,
		filepath.Join(dir, name+".token"))
	return fmt.Sprintf("\n[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", %q]\nstop_grace = 2\n%s\n", name, script, extra)
}

// logHas reports whether the harness's activity entries hold text.
func (f *fleet) logHas(name, text string) bool {
	f.T.Helper()
	var s api.LogsSummary
	f.MustJSON(&s, "logs", name, "--lines", "1000")
	for _, e := range s.Entries {
		if strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

// logLine reports whether one of the harness's activity entries is text
// (trailing blanks are trimmed from entries).
func (f *fleet) logLine(name, text string) bool {
	f.T.Helper()
	var s api.LogsSummary
	f.MustJSON(&s, "logs", name, "--lines", "1000")
	return slices.ContainsFunc(s.Entries, func(e api.LogEntry) bool { return e.Text == text })
}

func (f *fleet) waitLog(name, text string) {
	f.T.Helper()
	f.WaitFor(name+" to print "+text, 20*time.Second, func() bool { return f.logHas(name, text) })
}

// jsonError runs a --json verb that must fail and returns its error body.
func (f *fleet) jsonError(args ...string) errcode.Body {
	f.T.Helper()
	out, errOut, code := f.Run(append(args, "--json")...)
	var body struct {
		Error errcode.Body `json:"error"`
	}
	if code == 0 || json.Unmarshal([]byte(out), &body) != nil {
		f.T.Fatalf("harness %v --json: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return body.Error
}

// TestScenario_SendAnswersAPrompt: `harness send` types text, keys and
// Enter into a running harness through the CLI, the socket and an MCP
// session granted input; the refusals carry not_running (a stopped
// harness), invalid_argument (a stdio upstream, a key that does not
// exist) on all three doors; a session granted read and write only
// neither sees nor may call harness_send.
func TestScenario_SendAnswersAPrompt(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, lineReader("agent", dir, "enabled = true\nmcp_allow = [\"read\", \"write\", \"input\"]")+
		lineReader("rw", dir, "enabled = true\nmcp_allow = [\"read\", \"write\"]")+
		lineReader("idle", dir, "")+
		upstreamTable("up", "send-"+filepath.Base(dir), ""))
	f.waitLog("agent", "ready")

	// The CLI: text then Enter; keys in order (Backspace erases in the
	// line discipline, as it would for a person).
	var res api.SendResult
	f.MustJSON(&res, "send", "agent", "hello there", "--enter")
	if res.Name != "agent" || res.RunID == 0 || res.Bytes != len("hello there\r") {
		t.Fatalf("send --json: %+v", res)
	}
	f.waitLog("agent", "got: hello there")
	if out := f.MustRun("send", "agent", "ab", "--key", "Backspace", "--key", "Space", "--key", "Enter"); !strings.Contains(out, "sent 5 bytes to agent") {
		t.Fatalf("send: %s", out)
	}
	f.WaitFor("agent to print got: a", 20*time.Second, func() bool { return f.logLine("agent", "got: a") })

	// Refusals, with their codes, through the CLI's --json ...
	refusals := []struct {
		args api.SendArgs
		code errcode.Code
		says string
	}{
		{api.SendArgs{Name: "idle", Text: "x", Enter: true}, errcode.NotRunning, "not running"},
		{api.SendArgs{Name: "mcp.up", Text: "x", Enter: true}, errcode.InvalidArgument, "no terminal"},
		{api.SendArgs{Name: "agent", Text: "refused", Keys: []string{"F13"}, Enter: true}, errcode.InvalidArgument, "valid keys are Enter, Tab"},
	}
	for _, r := range refusals {
		args := []string{"send", r.args.Name, r.args.Text, "--enter"}
		for _, k := range r.args.Keys {
			args = append(args, "--key", k)
		}
		if b := f.jsonError(args...); b.Code != r.code || !strings.Contains(b.Message, r.says) {
			t.Errorf("CLI %v: %+v, want %s saying %q", args, b, r.code, r.says)
		}
	}
	// ... the socket ...
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range refusals {
		err := client.CallOnce(ctx, f.Socket, api.OpSend, r.args, nil)
		if errcode.Of(err) != r.code || !strings.Contains(err.Error(), r.says) {
			t.Errorf("socket %+v: %v, want %s", r.args, err, r.code)
		}
	}
	// ... and an MCP session of a harness granted input, which may type.
	in := f.mcpSession(token(t, filepath.Join(dir, "agent.token")), false, nil)
	if !slices.Contains(toolNames(t, in), "harness_send") {
		t.Fatalf("a session granted input lacks harness_send: %v", toolNames(t, in))
	}
	for _, r := range refusals {
		a := map[string]any{"name": r.args.Name, "text": r.args.Text, "enter": r.args.Enter}
		if r.args.Keys != nil {
			a["keys"] = r.args.Keys
		}
		res := callTool(t, in, "harness_send", a)
		if code := errorCode(t, res); code != string(r.code) {
			t.Errorf("MCP %+v: code %q", a, code)
		}
	}
	sent := callTool(t, in, "harness_send", map[string]any{"name": "agent", "text": "via mcp", "enter": true})
	var sr api.SendResult
	if resultJSON(t, sent, &sr); sent.IsError || sr.Name != "agent" || sr.Bytes != len("via mcp\r") {
		t.Fatalf("harness_send: %+v", sent)
	}
	f.waitLog("agent", "got: via mcp")

	// Read and write do not make input: not listed, refused, nothing typed.
	rw := f.mcpSession(token(t, filepath.Join(dir, "rw.token")), false, nil)
	control := f.mcpSession("", true, nil)
	for name, s := range map[string]*mcp.ClientSession{"read+write": rw, "--allow-control": control} {
		if slices.Contains(toolNames(t, s), "harness_send") {
			t.Errorf("%s session lists harness_send", name)
		}
		res := callTool(t, s, "harness_send", map[string]any{"name": "agent", "text": "sneaky", "enter": true})
		if code := errorCode(t, res); code != string(errcode.NotPermitted) {
			t.Errorf("%s session: harness_send answered %q", name, code)
		}
	}
	// The refused sends typed nothing: the next line is the marker alone.
	f.MustRun("send", "agent", "marker", "--enter")
	f.waitLog("agent", "got: marker")
	for _, stray := range []string{"refused", "sneaky"} {
		if f.logHas("agent", stray) {
			t.Errorf("a refused send typed %q", stray)
		}
	}
}

// TestScenario_SendInsideAProjectTakesItsOwnNames: standing in a project,
// `harness send agent` means that project's agent, as logs does; elsewhere
// the name is the global one.
func TestScenario_SendInsideAProjectTakesItsOwnNames(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, lineReader("agent", dir, "enabled = true"))
	proj := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	toml := "[project]\nname = \"web\"\n" + lineReader("agent", proj, "")
	if err := os.WriteFile(filepath.Join(proj, "harness.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustRunIn(proj, "up")
	f.waitLog("web/agent", "ready")
	f.waitLog("agent", "ready")
	if out := f.mustRunIn(proj, "send", "agent", "to the project's", "--enter"); !strings.Contains(out, "to web/agent") {
		t.Fatalf("send in the project: %s", out)
	}
	f.waitLog("web/agent", "got: to the project's")
	f.MustRun("send", "agent", "to the global one", "--enter")
	f.waitLog("agent", "got: to the global one")
	if f.logHas("agent", "project's") || f.logHas("web/agent", "global") {
		t.Fatal("a send reached the other agent")
	}
}
