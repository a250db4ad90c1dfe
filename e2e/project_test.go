//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runIn invokes the CLI from dir, as a user standing in a project would.
func (f *fleet) runIn(dir string, args ...string) (stdout, stderr string, code int) {
	c := exec.Command(harnessBin, append([]string{"--socket", f.Socket, "--config", f.Config}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), "HARNESS_SOCKET=", "HARNESS_MCP_TOKEN=")
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.T.Fatal(err)
	}
	return o.String(), e.String(), code
}

func (f *fleet) mustRunIn(dir string, args ...string) string {
	f.T.Helper()
	out, errOut, code := f.runIn(dir, args...)
	if code != 0 {
		f.T.Fatalf("harness %v in %s: exit %d\n%s%s", args, dir, code, out, errOut)
	}
	return out
}

// projectDir writes a project file declaring harnesses that write their
// tokens to tokdir, and one upstream KEY of the demo server.
func projectDir(t *testing.T, name, key, tokdir string, harnesses ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o700)
	var b strings.Builder
	fmt.Fprintf(&b, "[project]\nname = %q\n", name)
	for _, h := range harnesses {
		fmt.Fprintf(&b, "\n[harness.%s]\ncmd = \"sh\"\nargs = [\"-c\", \"echo $HARNESS_MCP_TOKEN > %s; exec sleep 100000\"]\n", h, filepath.Join(tokdir, name+"-"+h+".token"))
	}
	fmt.Fprintf(&b, "\n[mcp.%s]\ncmd = %q\nargs = [\"demo-upstream\", \"--name\", %q]\n", key, harnessBin, "proj-"+name+"-"+filepath.Base(tokdir))
	os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(b.String()), 0o600)
	return dir
}

func TestProjects_SideBySideWithScopedUpstreams(t *testing.T) {
	tok := t.TempDir()
	global := sleeperConfig + upstreamTable("shared", "shared-"+filepath.Base(tok), "")
	f := newFleet(t, global)
	before, _ := os.ReadFile(f.Config)
	a := projectDir(t, "a", "alpha", tok, "agent", "helper")
	b := projectDir(t, "b", "beta", tok, "agent")

	// Discovery walks up from a subdirectory.
	f.mustRunIn(filepath.Join(a, "sub", "deeper"), "up")
	f.mustRunIn(b, "up")
	var all []struct {
		Name    string `json:"name"`
		Project string `json:"project"`
		State   string `json:"state"`
	}
	f.MustJSON(&all, "list")
	names := []string{}
	for _, u := range all {
		names = append(names, u.Name)
		if strings.HasPrefix(u.Name, "a/") && u.Project != "a" {
			t.Errorf("list --json row %s carries project %q", u.Name, u.Project)
		}
	}
	if !slices.Equal(names, []string{"a/agent", "a/helper", "b/agent", "sleeper"}) {
		t.Fatalf("list: %v", names)
	}
	var ps []struct {
		Name string `json:"name"`
	}
	out := f.mustRunIn(b, "ps", "--json")
	if !strings.Contains(out, `"b/agent"`) || strings.Contains(out, `"a/agent"`) || strings.Contains(out, "sleeper") {
		t.Fatalf("ps in b: %s", out)
	}
	_ = ps
	f.waitState("a/agent", "running")
	f.waitState("b/agent", "running")

	sa := f.mcpSession(token(t, filepath.Join(tok, "a-agent.token")), false, nil)
	sb := f.mcpSession(token(t, filepath.Join(tok, "b-agent.token")), false, nil)
	waitTool(t, f, sa, "alpha__echo")
	waitTool(t, f, sb, "beta__echo")
	waitTool(t, f, sa, "shared__echo")
	for _, n := range toolNames(t, sa) {
		if strings.HasPrefix(n, "beta__") || n == "harness_stop" {
			t.Fatalf("a/agent sees %s", n)
		}
	}
	for _, n := range toolNames(t, sb) {
		if strings.HasPrefix(n, "alpha__") {
			t.Fatalf("b/agent sees %s", n)
		}
	}
	if code := errorCode(t, callTool(t, sb, "alpha__echo", map[string]any{"text": "x"})); code != "unknown_namespace" {
		t.Fatalf("b calling a's upstream: %q", code)
	}
	// Two harnesses of project a share one alpha process.
	sa2 := f.mcpSession(token(t, filepath.Join(tok, "a-helper.token")), false, nil)
	waitTool(t, f, sa2, "alpha__echo")
	if res := callTool(t, sa2, "alpha__echo", map[string]any{"text": "hi"}); res.IsError {
		t.Fatalf("a/helper: %+v", res)
	}
	if n := len(procsWithArg("proj-a-" + filepath.Base(tok))); n != 1 {
		t.Fatalf("%d alpha processes, want 1", n)
	}

	// Down stops and forgets; after a daemon restart a stays gone, b is back.
	aPID := f.unit("a/agent").PID
	f.mustRunIn(a, "down")
	waitGone(t, "a/agent after down", aPID)
	f.MustJSON(&all, "list")
	for _, u := range all {
		if strings.HasPrefix(u.Name, "a/") {
			t.Fatalf("a/ still listed after down: %v", u)
		}
	}
	f.Stop()
	f.start()
	f.waitState("b/agent", "running")
	f.MustJSON(&all, "list")
	for _, u := range all {
		if strings.HasPrefix(u.Name, "a/") {
			t.Fatalf("a came back after restart: %v", u)
		}
	}
	f.MustRun("down", "b")
	after, _ := os.ReadFile(f.Config)
	if !bytes.Equal(before, after) {
		t.Fatal("the global config file changed")
	}
}

func TestProjects_RefusedFilesRegisterNothing(t *testing.T) {
	f := newFleet(t, sleeperConfig+upstreamTable("shared", "refuse-shared", ""))
	cases := map[string]string{
		"mcp_allow":  "[harness.x]\ncmd = \"true\"\nmcp_allow = [\"read\", \"write\"]\n",
		"schedule":   "[harness.x]\ncmd = \"true\"\nschedule = \"@hourly\"\n",
		"daemon":     "[daemon]\nwatch_config = true\n",
		"mcp.shared": "[harness.x]\ncmd = \"true\"\n[mcp.shared]\ncmd = \"true\"\n",
		"sleeper":    "[project]\nname = \"sleeper\"\n[harness.x]\ncmd = \"true\"\n",
	}
	for want, text := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(text), 0o600)
		_, errOut, code := f.runIn(dir, "up")
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("up with %s: exit %d, %q", want, code, errOut)
		}
	}
	var us []unitInfo
	f.MustJSON(&us, "list")
	if len(us) != 1 {
		t.Fatalf("a refused project registered units: %+v", us)
	}
	// No file anywhere up the tree: a clear error, nothing sent.
	_, errOut, code := f.runIn("/", "up")
	if code == 0 || !strings.Contains(errOut, "no harness.toml") {
		t.Fatalf("up outside a project: %d %q", code, errOut)
	}
	// The global config is never adopted as a project.
	_, errOut, code = f.runIn(filepath.Dir(f.Config), "up")
	if code == 0 || !strings.Contains(errOut, "no harness.toml") {
		t.Fatalf("up next to the global config: %d %q", code, errOut)
	}
}
