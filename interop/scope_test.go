//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Least privilege for upstream tools, end to end with two npm
// reference servers behind the broker, whose own readOnlyHint annotations
// decide the classes, and the TypeScript client on attributed sessions.

// tokenHarness is a harness whose run writes its HARNESS_MCP_TOKEN to
// dir/NAME.token and sleeps: the test then opens the harness's own
// session with that token, as the agent it stands for would.
func tokenHarness(name, dir, extra string) string {
	return fmt.Sprintf("\n[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", \"echo $HARNESS_MCP_TOKEN > %s; exec sleep 100000\"]\nenabled = true\nstop_grace = 2\n%s\n",
		name, filepath.Join(dir, name+".token"), extra)
}

// harnessToken waits for the token a tokenHarness wrote.
func (f *fleet) harnessToken(dir, name string) string {
	f.T.Helper()
	var tok string
	f.WaitFor("the token of "+name, 20*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name+".token"))
		tok = strings.TrimSpace(string(b))
		return err == nil && len(tok) >= 32
	})
	return tok
}

// bridgeAs is the transport that runs `harness mcp` with a harness's
// token, attributing the session to that harness.
func (f *fleet) bridgeAs(token string) map[string]any {
	tr := f.bridge()
	tr["env"] = map[string]string{"HARNESS_SOCKET": "", "HARNESS_MCP_TOKEN": token}
	return tr
}

// upstreamTools are the KEY__tool names (no harness_* tools) a listTools
// step returned, sorted.
func upstreamTools(t *testing.T, c *tsClient, s step) []string {
	t.Helper()
	var out []string
	for name := range toolsByName(t, c, s) {
		if !strings.HasPrefix(name, "harness_") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// refusal is the {code, message} of an isError tool result ("" and the
// text of a success).
func refusal(t *testing.T, c *tsClient, s step) (code, message string) {
	t.Helper()
	var r toolResult
	c.must(s, &r)
	if !r.IsError {
		return "", r.text()
	}
	// The body is structuredContent too, unless the tool declared an
	// output schema it would not match; the text always carries it.
	var body struct{ Code, Message string }
	if err := json.Unmarshal([]byte(r.text()), &body); err != nil {
		t.Fatalf("step %d: error body %q: %v", s.I, r.text(), err)
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		var sc struct{ Code, Message string }
		if json.Unmarshal(r.StructuredContent, &sc) != nil || sc != body {
			t.Errorf("step %d: structuredContent %s differs from the text %q", s.I, r.StructuredContent, r.text())
		}
	}
	return body.Code, body.Message
}

// directClasses lists a server's tools directly and classes them the way
// docs/design/mcp.md says, from their own annotations: the test's oracle.
func directClasses(t *testing.T, c *tsClient, s step, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, raw := range toolsByName(t, c, s) {
		var tl struct {
			Annotations struct {
				ReadOnlyHint bool `json:"readOnlyHint"`
			} `json:"annotations"`
		}
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		class := "write"
		if tl.Annotations.ReadOnlyHint {
			class = "read"
		}
		out[key+"__"+name] = class
	}
	return out
}

type toolClass struct {
	Tool  string `json:"tool"`
	Name  string `json:"name"`
	Class string `json:"class"`
	Why   string `json:"why"`
	Rule  string `json:"rule"`
}

func (f *fleet) toolClasses() map[string]toolClass {
	f.T.Helper()
	var rows []struct {
		Key         string      `json:"key"`
		ToolClasses []toolClass `json:"tool_classes"`
	}
	f.MustJSON(&rows, "mcp", "status")
	out := map[string]toolClass{}
	for _, r := range rows {
		for _, tc := range r.ToolClasses {
			out[tc.Name] = tc
		}
	}
	return out
}

// Each grant sees exactly the tools it covers, and a call outside it is
// not_permitted naming the grant it needs, before the upstream sees it:
// default ["read"] sees only read-class tools; ["read",
// "everything:write"] sees everything's write tools but not filesystem's;
// ["harness:read"] sees no upstream tool; exclude_tools hides a tool even
// from ["read","write"]; write_tools turns a hinted read tool into write.
func TestTS_GrantsDecideWhatEachHarnessSees(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("shared notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[mcp.everything]
cmd = %q
args = ["stdio"]
write_tools = ["get-sum"]

[mcp.filesystem]
cmd = %q
args = [%q]
exclude_tools = ["move_*"]
`, bin("mcp-server-everything"), bin("mcp-server-filesystem"), root)+
		tokenHarness("reader", dir, "")+
		tokenHarness("evw", dir, `mcp_allow = ["read", "everything:write"]`)+
		tokenHarness("facade", dir, `mcp_allow = ["harness:read"]`)+
		tokenHarness("rw", dir, `mcp_allow = ["read", "write"]`))
	f.waitUpstreams("everything", "filesystem")
	tok := map[string]string{}
	for _, h := range []string{"reader", "evw", "facade", "rw"} {
		tok[h] = f.harnessToken(dir, h)
	}

	pkg := filepath.Join(interopDir, "node_modules", "@modelcontextprotocol")
	direct := func(script string, args ...string) map[string]any {
		return map[string]any{"type": "stdio", "command": nodeBin, "args": append([]string{filepath.Join(pkg, script)}, args...)}
	}
	readme := filepath.Join(root, "notes.txt")
	c, steps := runTS(t,
		connectStep("everything", direct("server-everything/dist/index.js", "stdio")), // 0
		connectStep("filesystem", direct("server-filesystem/dist/index.js", root)),    // 1
		opStep("everything", "listTools"),                                             // 2
		opStep("filesystem", "listTools"),                                             // 3
		connectStep("reader", f.bridgeAs(tok["reader"])),                              // 4
		connectStep("evw", f.bridgeAs(tok["evw"])),                                    // 5
		connectStep("facade", f.bridgeAs(tok["facade"])),                              // 6
		connectStep("rw", f.bridgeAs(tok["rw"])),                                      // 7
		opStep("reader", "listTools"),                                                 // 8
		opStep("evw", "listTools"),                                                    // 9
		opStep("facade", "listTools"),                                                 // 10
		opStep("rw", "listTools"),                                                     // 11
		opStep("reader", "callTool", "name", "filesystem__write_file", "args", map[string]any{"path": filepath.Join(root, "reader.txt"), "content": "x"}),     // 12
		opStep("reader", "callTool", "name", "everything__get-sum", "args", map[string]any{"a": 1, "b": 2}),                                                   // 13
		opStep("reader", "callTool", "name", "filesystem__read_text_file", "args", map[string]any{"path": readme}),                                            // 14
		opStep("evw", "callTool", "name", "everything__get-sum", "args", map[string]any{"a": 2, "b": 40}),                                                     // 15
		opStep("evw", "callTool", "name", "filesystem__create_directory", "args", map[string]any{"path": filepath.Join(root, "evw")}),                         // 16
		opStep("facade", "callTool", "name", "everything__echo", "args", map[string]any{"message": "hi"}),                                                     // 17
		opStep("facade", "callTool", "name", "harness_list"),                                                                                                  // 18
		opStep("rw", "callTool", "name", "filesystem__move_file", "args", map[string]any{"source": readme, "destination": filepath.Join(root, "moved.txt")}),  // 19
		opStep("rw", "callTool", "name", "filesystem__write_file", "args", map[string]any{"path": filepath.Join(root, "rw.txt"), "content": "written by rw"}), // 20
	)
	for i := range 8 {
		c.must(steps[i], nil)
	}

	// The oracle: each server's own annotations, then the config's
	// overrides (get-sum is hinted read, made write; move_file is hidden).
	want := directClasses(t, c, steps[2], "everything")
	for name, class := range directClasses(t, c, steps[3], "filesystem") {
		want[name] = class
	}
	if want["everything__get-sum"] != "read" || want["filesystem__move_file"] != "write" || want["filesystem__write_file"] != "write" ||
		want["everything__echo"] != "read" || want["everything__toggle-simulated-logging"] != "write" {
		t.Fatalf("the servers' annotations are not what this test relies on: %v", want)
	}
	want["everything__get-sum"] = "write"
	delete(want, "filesystem__move_file")
	// The broker declares elicitation and sampling to its upstreams (it
	// passes their requests back to the session), so server-everything lists its two tools for them
	// through harness; the direct client above declares neither and does not
	// see them. They carry no read-only hint: write.
	want["everything__trigger-elicitation-request"] = "write"
	want["everything__trigger-sampling-request"] = "write"
	expect := func(keep func(name, class string) bool) []string {
		var out []string
		for name, class := range want {
			if keep(name, class) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, v := range []struct {
		who  string
		s    step
		want []string
	}{
		{"reader", steps[8], expect(func(_, class string) bool { return class == "read" })},
		{"evw", steps[9], expect(func(name, class string) bool { return class == "read" || strings.HasPrefix(name, "everything__") })},
		{"facade", steps[10], nil},
		{"rw", steps[11], expect(func(string, string) bool { return true })},
	} {
		if got := upstreamTools(t, c, v.s); !slices.Equal(got, v.want) {
			t.Errorf("%s lists upstream tools\n %v\nwant\n %v", v.who, got, v.want)
		}
	}
	if names := toolsByName(t, c, steps[10]); len(names) == 0 {
		t.Error(`["harness:read"] lists no facade tool either`)
	}

	for _, r := range []struct {
		s          step
		code, need string
	}{
		{steps[12], "not_permitted", "needs filesystem:write"},
		{steps[13], "not_permitted", "needs everything:write"},
		{steps[16], "not_permitted", "needs filesystem:write"},
		{steps[17], "not_permitted", "needs everything:read"},
		{steps[19], "unknown_tool", "exclude_tools"},
	} {
		if code, msg := refusal(t, c, r.s); code != r.code || !strings.Contains(msg, r.need) {
			t.Errorf("step %d %s: %s %q, want %s naming %q", r.s.I, r.s.Conn, code, msg, r.code, r.need)
		}
	}
	for _, s := range []step{steps[14], steps[15], steps[18], steps[20]} {
		if code, text := refusal(t, c, s); code != "" {
			t.Errorf("step %d (%s) refused: %s %s", s.I, s.Conn, code, text)
		}
	}
	if _, text := refusal(t, c, steps[15]); !strings.Contains(text, "42") {
		t.Errorf("everything__get-sum for evw: %q", text)
	}
	// Refused writes changed nothing; the granted one did.
	for _, p := range []string{"reader.txt", "evw", "moved.txt"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s exists: a refused call reached the upstream", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "rw.txt")); err != nil || string(b) != "written by rw" {
		t.Errorf("rw.txt: %q %v", b, err)
	}

	// mcp status says each tool's class and why; describe, each grant.
	classes := f.toolClasses()
	for name, w := range map[string]toolClass{
		"everything__echo":       {Class: "read", Why: "hint", Rule: "readOnlyHint: true"},
		"everything__get-sum":    {Class: "write", Why: "override", Rule: `write_tools "get-sum"`},
		"filesystem__write_file": {Class: "write", Why: "hint", Rule: "readOnlyHint: false"},
		"filesystem__move_file":  {Why: "excluded", Rule: `exclude_tools "move_*"`},
	} {
		if got := classes[name]; got.Class != w.Class || got.Why != w.Why || got.Rule != w.Rule {
			t.Errorf("mcp status %s: %+v, want %+v", name, got, w)
		}
	}
	for name, class := range want {
		if classes[name].Class != class {
			t.Errorf("mcp status %s: class %q, want %q", name, classes[name].Class, class)
		}
	}
	var d struct {
		Config struct {
			MCPAllow []string `json:"mcp_allow"`
		} `json:"config"`
		Grant map[string][]string `json:"grant"`
	}
	f.MustJSON(&d, "describe", "evw")
	wantGrant := map[string][]string{"harness": {"read"}, "everything": {"read", "write"}, "filesystem": {"read"}}
	if fmt.Sprint(d.Grant) != fmt.Sprint(wantGrant) || !slices.Equal(d.Config.MCPAllow, []string{"read", "everything:write"}) {
		t.Errorf("describe evw: grant %v mcp_allow %v, want %v and [read everything:write]", d.Grant, d.Config.MCPAllow, wantGrant)
	}
}

// Widening mcp_allow and reloading sends the open session list_changed and
// its next call succeeds, without restarting the harness; narrowing holds
// from the very next call; bad grants fail the reload naming file:line and
// the key, and the last good grant stays in force.
func TestTS_ReloadWidensAndNarrowsAnOpenSession(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	upstream := fmt.Sprintf("[mcp.filesystem]\ncmd = %q\nargs = [%q]\n", bin("mcp-server-filesystem"), root)
	config := func(allow string) string {
		return upstream + tokenHarness("agent", dir, "mcp_allow = "+allow)
	}
	f := newFleet(t, config(`["read"]`))
	f.waitUpstreams("filesystem")
	tok := f.harnessToken(dir, "agent")
	agentPID := f.waitRunning("agent").PID

	mkdir := func(name string) map[string]any {
		return opStep("a", "callTool", "name", "filesystem__create_directory", "args", map[string]any{"path": filepath.Join(root, name)})
	}
	listChanged := func(n int) map[string]any {
		return opStep("a", "waitNotification", "method", "notifications/tools/list_changed", "count", n)
	}
	c := startTS(t,
		connectStep("a", f.bridgeAs(tok)), // 0
		opStep("a", "listTools"),          // 1
		mkdir("early"),                    // 2
		opStep("", "pause"),               // 3: widen
		listChanged(1),                    // 4
		opStep("a", "listTools"),          // 5
		mkdir("widened"),                  // 6
		opStep("", "pause"),               // 7: bad grants, then narrow
		mkdir("narrowed"),                 // 8
		listChanged(2),                    // 9
		opStep("a", "listTools"),          // 10
		opStep("a", "callTool", "name", "filesystem__list_directory", "args", map[string]any{"path": root}), // 11
	)
	// steps[i] is plan step i: a pause prints a line, then one more
	// ("resume") when resumed, which is read and set aside here.
	steps := make([]step, 12)
	upTo := func(i int) {
		for {
			s := c.next()
			if s.Op == "resume" {
				c.must(s, nil)
				continue
			}
			steps[s.I] = s
			if s.I == i {
				return
			}
		}
	}
	upTo(3) // through the first pause
	c.must(steps[0], nil)
	if got := upstreamTools(t, c, steps[1]); slices.Contains(got, "filesystem__create_directory") || !slices.Contains(got, "filesystem__list_directory") {
		t.Fatalf(`["read"] lists %v`, got)
	}
	if code, msg := refusal(t, c, steps[2]); code != "not_permitted" || !strings.Contains(msg, "needs filesystem:write") {
		t.Fatalf("create_directory under read: %s %q", code, msg)
	}

	f.WriteConfig(config(`["read", "filesystem:write"]`))
	if out, errOut, code := f.Run("reload"); code != 0 {
		t.Fatalf("widening reload: exit %d\n%s%s", code, out, errOut)
	}
	c.resume()
	upTo(7)
	c.must(steps[4], nil)
	if got := upstreamTools(t, c, steps[5]); !slices.Contains(got, "filesystem__create_directory") {
		t.Fatalf("after widening the session lists %v", got)
	}
	if code, msg := refusal(t, c, steps[6]); code != "" {
		t.Fatalf("create_directory after widening: %s %q", code, msg)
	}
	if fi, err := os.Stat(filepath.Join(root, "widened")); err != nil || !fi.IsDir() {
		t.Fatalf("the widened call did not create its directory: %v", err)
	}

	// Bad grants: the reload fails naming file, line and key; the daemon
	// keeps the widened grant.
	lines := strings.Split(config(`["read"]`), "\n")
	line := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "mcp_allow") }) + 1
	for _, bad := range []struct{ allow, says string }{
		{`["github:wrte"]`, `"github:wrte": unknown class "wrte"`},
		{`["nosuch:read"]`, `"nosuch:read": unknown namespace "nosuch"`},
	} {
		f.WriteConfig(config(bad.allow))
		out, errOut, code := f.Run("reload")
		want := fmt.Sprintf("harness.toml:%d: harness.agent.mcp_allow: %s", line, bad.says)
		if code == 0 || !strings.Contains(out+errOut, want) {
			t.Errorf("reload with %s: exit %d, output %q; want it to say %q", bad.allow, code, out+errOut, want)
		}
	}
	var d struct {
		Grant map[string][]string `json:"grant"`
	}
	f.MustJSON(&d, "describe", "agent")
	if !slices.Equal(d.Grant["filesystem"], []string{"read", "write"}) {
		t.Errorf("after refused reloads the grant is %v, want the last good one", d.Grant)
	}

	f.WriteConfig(config(`["read"]`))
	if out, errOut, code := f.Run("reload"); code != 0 {
		t.Fatalf("narrowing reload: exit %d\n%s%s", code, out, errOut)
	}
	c.resume()
	upTo(11)
	c.wait()
	if code, msg := refusal(t, c, steps[8]); code != "not_permitted" || !strings.Contains(msg, "needs filesystem:write") {
		t.Errorf("the call right after narrowing: %s %q", code, msg)
	}
	if _, err := os.Stat(filepath.Join(root, "narrowed")); err == nil {
		t.Error("the call after narrowing reached the upstream")
	}
	c.must(steps[9], nil)
	if got := upstreamTools(t, c, steps[10]); slices.Contains(got, "filesystem__create_directory") {
		t.Errorf("after narrowing the session lists %v", got)
	}
	if code, msg := refusal(t, c, steps[11]); code != "" || !strings.Contains(msg, "widened") {
		t.Errorf("a read after narrowing: %s %q", code, msg)
	}
	if u := f.waitRunning("agent"); u.PID != agentPID {
		t.Errorf("the harness was restarted (pid %d -> %d): grants apply without a restart", agentPID, u.PID)
	}
}

// The harness's own command is the MCP client, as an agent CLI is: it
// launches `harness mcp`, which presents the token injected into its
// environment. Under the default grant it lists only read-class upstream
// tools and a write one is not_permitted.
func TestTS_AgentLaunchedBridgeGetsTheDefaultGrant(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	socket := filepath.Join(dir, "run", "harness.sock")
	plan, _ := json.Marshal(map[string]any{"steps": []map[string]any{
		connectStep("a", map[string]any{"type": "stdio", "command": harnessBin, "args": []string{"mcp", "--socket", socket}}),
		opStep("a", "listTools", "id", "tools"),
		opStep("a", "callTool", "name", "filesystem__write_file", "args", map[string]any{"path": filepath.Join(root, "agent.txt"), "content": "x"}, "id", "write"),
		opStep("a", "callTool", "name", "filesystem__list_allowed_directories", "id", "read"),
		opStep("a", "close", "id", "done"),
	}})
	f := newFleetAt(t, dir, fmt.Sprintf(`
[mcp.filesystem]
cmd = %q
args = [%q]

[harness.agent]
cmd = %q
args = [%q, '%s']
workdir = %q
restart = "no"
`, bin("mcp-server-filesystem"), root, nodeBin, filepath.Join(interopDir, "client.mjs"), plan, interopDir))
	f.waitUpstreams("filesystem")
	f.Run("start", "agent")
	var raw struct {
		Text string `json:"text"`
	}
	f.WaitFor("the agent's MCP client to finish", 60*time.Second, func() bool {
		f.MustJSON(&raw, "logs", "agent", "--raw")
		return strings.Contains(raw.Text, `"id":"done"`)
	})
	byID := map[string]step{}
	for _, line := range strings.Split(raw.Text, "\n") {
		var s step
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &s) == nil && s.ID != "" {
			byID[s.ID] = s
		}
	}
	c := &tsClient{t: t}
	var listed struct{ Tools []tool }
	c.must(byID["tools"], &listed)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "filesystem__read_text_file") || slices.Contains(names, "filesystem__write_file") || slices.Contains(names, "harness_stop") {
		t.Errorf("the agent's own session lists %v: want read-class tools only", names)
	}
	if code, msg := refusal(t, c, byID["write"]); code != "not_permitted" || !strings.Contains(msg, "needs filesystem:write") ||
		!strings.Contains(msg, `harness agent's mcp_allow is ["read"]`) {
		t.Errorf("write_file from the agent: %s %q", code, msg)
	}
	if code, msg := refusal(t, c, byID["read"]); code != "" || !strings.Contains(msg, root) {
		t.Errorf("list_allowed_directories from the agent: %s %q", code, msg)
	}
	if _, err := os.Stat(filepath.Join(root, "agent.txt")); err == nil {
		t.Error("the refused write reached the upstream")
	}
}
