package control

import (
	"errors"
	"reflect"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// describe shows each harness's effective grant over the facade and every
// upstream its sessions see; the sessions get the same grant from
// HarnessGrant. A project's harnesses get the project rule.
func TestDescribe_EffectiveGrantPerNamespace(t *testing.T) {
	global := sleeper("boss", `mcp_allow = ["read", "gitea:write", "harness:input"]`) + sleeper("plain", "") +
		"[mcp.gitea]\ncmd = \"cat\"\n[mcp.jira]\ncmd = \"cat\"\n"
	f := newFixture(t, global)
	path := writeProject(t, "web", []string{"agent"}, []string{"db"})
	f.mustCall(api.OpProjectUp, api.ProjectArgs{Path: path}, nil)

	for name, want := range map[string]map[string][]api.Class{
		"boss":      {"harness": {api.Read, api.Input}, "gitea": {api.Read, api.Write}, "jira": {api.Read}},
		"plain":     {"harness": {api.Read}, "gitea": {api.Read}, "jira": {api.Read}},
		"web/agent": {"harness": {api.Read}, "gitea": {api.Read}, "jira": {api.Read}, "db": {api.Read, api.Write}},
	} {
		var d api.Description
		f.mustCall(api.OpDescribe, api.NameArg{Name: name}, &d)
		if !reflect.DeepEqual(d.Grant, want) {
			t.Errorf("describe %s: grant %v, want %v", name, d.Grant, want)
		}
		g, ok := f.c.HarnessGrant(name)
		if !ok || !reflect.DeepEqual(g.PerNamespace([]string{"harness", "gitea", "jira", "db"}), withDB(want)) {
			t.Errorf("HarnessGrant(%s) = %s, %v", name, g, ok)
		}
	}
	var d api.Description
	f.mustCall(api.OpDescribe, api.NameArg{Name: "boss"}, &d)
	if want := []string{"read", "gitea:write", "harness:input"}; !reflect.DeepEqual(d.Config.MCPAllow, want) {
		t.Errorf("config.mcp_allow %v, want %v as written", d.Config.MCPAllow, want)
	}
	if _, ok := f.c.HarnessGrant("ghost"); ok {
		t.Error("a harness that does not exist has a grant")
	}

	// A reload naming an unknown namespace or class keeps the last good
	// config, and with it the grants.
	for _, bad := range []string{`mcp_allow = ["nosuch:read"]`, `mcp_allow = ["gitea:wrte"]`} {
		f.write(sleeper("boss", bad) + sleeper("plain", "") + "[mcp.gitea]\ncmd = \"cat\"\n[mcp.jira]\ncmd = \"cat\"\n")
		if err := f.call(api.OpReload, struct{}{}, nil); !errors.Is(err, errcode.ErrConfigInvalid) {
			t.Errorf("reload with %s: %v", bad, err)
		}
		if g, _ := f.c.HarnessGrant("boss"); !g.Allows("gitea", api.Write) {
			t.Errorf("after the refused reload (%s) boss has %s", bad, g)
		}
	}
}

// withDB adds the db namespace a global harness's per-namespace view lacks.
func withDB(m map[string][]api.Class) map[string][]api.Class {
	out := map[string][]api.Class{"db": {api.Read}}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mcp_status shows each listed tool's class; until an upstream is listed
// the list is empty, never null.
func TestMCPStatus_ToolClassesIsAList(t *testing.T) {
	f := newFixture(t, "[mcp.gitea]\ncmd = \"cat\"\n")
	var st []api.UpstreamStatus
	f.mustCall(api.OpMCPStatus, struct{}{}, &st)
	if len(st) != 1 || st[0].ToolClasses == nil {
		t.Fatalf("mcp_status %+v", st)
	}
}
