//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type toolClassRow struct {
	Tool  string `json:"tool"`
	Name  string `json:"name"`
	Class string `json:"class"`
	Why   string `json:"why"`
	Rule  string `json:"rule"`
}

// classesOf returns `mcp status --json`'s tool_classes of upstream key.
func (f *fleet) classesOf(key string) map[string]toolClassRow {
	f.T.Helper()
	var rows []struct {
		Key         string         `json:"key"`
		PID         int            `json:"pid"`
		ToolClasses []toolClassRow `json:"tool_classes"`
	}
	f.MustJSON(&rows, "mcp", "status")
	out := map[string]toolClassRow{}
	for _, r := range rows {
		if r.Key == key {
			for _, c := range r.ToolClasses {
				out[c.Tool] = c
			}
		}
	}
	return out
}

// read_tools, write_tools and exclude_tools classify an upstream's tools
// as `harness mcp status --json` shows; a reload that changes them applies
// at once, without restarting the upstream, and the sessions whose view
// changed get list_changed; plainly overlapping globs are a reload warning.
func TestScope_UpstreamToolClassesFollowTheConfig(t *testing.T) {
	dir := t.TempDir()
	agent := tokenHarness("agent", dir, "")
	f := newFleet(t, upstreamTable("x", "scope-inst", `read_tools = ["add_*"]`+"\n"+`exclude_tools = ["env"]`)+agent)
	f.WaitFor("x's tools to be classified", 20*time.Second, func() bool { return len(f.classesOf("x")) > 0 })
	classes := f.classesOf("x")
	for tool, want := range map[string]toolClassRow{
		"echo":     {Name: "x__echo", Class: "read", Why: "hint", Rule: "readOnlyHint: true"},
		"add_tool": {Name: "x__add_tool", Class: "read", Why: "override", Rule: `read_tools "add_*"`},
		"env":      {Name: "x__env", Why: "excluded", Rule: `exclude_tools "env"`},
	} {
		want.Tool = tool
		if got := classes[tool]; got != want {
			t.Errorf("mcp status: %s is %+v, want %+v", tool, got, want)
		}
	}
	if out := f.MustRun("describe", "agent"); !strings.Contains(out, "grant:          harness=read x=read\n") {
		t.Errorf("describe agent does not show its grant:\n%s", out)
	}

	changed := make(chan struct{}, 8)
	s := f.mcpSession(token(t, filepath.Join(dir, "agent.token")), false, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	waitTool(t, f, s, "x__add_tool")
	if names := toolNames(t, s); !slices.Contains(names, "x__echo") || slices.Contains(names, "x__env") {
		t.Fatalf("agent lists %v", names)
	}
	for len(changed) > 0 {
		<-changed
	}
	if code := errorCode(t, callTool(t, s, "x__env", map[string]any{"key": "HOME"})); code != "unknown_tool" {
		t.Fatalf("excluded x__env: %q", code)
	}
	upstreamPID := func() int {
		var rows []struct {
			Key string `json:"key"`
			PID int    `json:"pid"`
		}
		f.MustJSON(&rows, "mcp", "status")
		for _, r := range rows {
			if r.Key == "x" {
				return r.PID
			}
		}
		return 0
	}
	pid := upstreamPID()

	// echo becomes write; read_tools and write_tools plainly overlap on it.
	f.WriteConfig(upstreamTable("x", "scope-inst", `read_tools = ["add_*", "echo"]`+"\n"+`write_tools = ["echo"]`) + agent)
	_, errOut, code := f.Run("reload")
	if code != 0 || !strings.Contains(errOut, `warning: harness.toml:6: mcp.x.write_tools: "echo" and read_tools "echo" both match the same names ("echo"); write wins`) {
		t.Fatalf("reload: exit %d, stderr %q", code, errOut)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after echo became write")
	}
	names := toolNames(t, s)
	if slices.Contains(names, "x__echo") || !slices.Contains(names, "x__env") {
		t.Fatalf("after the reload the agent lists %v", names)
	}
	res := callTool(t, s, "x__echo", map[string]any{"text": "hi"})
	if code := errorCode(t, res); code != "not_permitted" || !strings.Contains(text(t, res), "needs x:write") {
		t.Fatalf("x__echo as write: %q %s", code, text(t, res))
	}
	if got := f.classesOf("x")["echo"]; got.Class != "write" || got.Why != "override" {
		t.Errorf("mcp status after the reload: echo %+v", got)
	}
	// The listing shows that a real tool matches both: daemon-info says so,
	// next to the load-time warning.
	var info struct {
		Warnings []string `json:"warnings"`
	}
	f.MustJSON(&info, "daemon-info")
	if !slices.Contains(info.Warnings, `mcp.x: tool echo matches read_tools "echo" and write_tools "echo"; write wins`) ||
		!slices.ContainsFunc(info.Warnings, func(w string) bool { return strings.HasPrefix(w, "harness.toml:6: mcp.x.write_tools:") }) {
		t.Errorf("daemon-info warnings %q", info.Warnings)
	}
	if now := upstreamPID(); now != pid || pid == 0 {
		t.Errorf("the upstream was restarted (pid %d -> %d): a classification applies at once", pid, now)
	}
	var d struct {
		ConfigChanged bool `json:"config_changed"`
	}
	f.MustJSON(&d, "describe", "mcp.x")
	if d.ConfigChanged {
		t.Error("a classification change shows as config_changed (waiting for a restart)")
	}
}
