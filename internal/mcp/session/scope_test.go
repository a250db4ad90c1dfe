package session

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

func TestHandshakeIsClassicInitialize(t *testing.T) {
	e := newEnv(t)
	cs, _ := e.connect(t, Identity{})
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %q, want 2025-11-25", got)
	}
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "harness" || info.Version != "test" {
		t.Fatalf("server info %+v", info)
	}
}

func TestDefaultScopeListsReadToolsAndRefusesStop(t *testing.T) {
	e := newEnv(t)
	e.ops.Results["list"] = []map[string]any{{"name": "web", "state": "running"}}
	cs, _ := e.connect(t, Identity{Harness: "web"}) // no mcp_allow: default ["read"]

	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
		t.Fatalf("tools %v, want %v", got, readTools)
	}
	if code := errCode(t, call(t, cs, "harness_stop", `{"name":"web"}`)); code != errcode.NotPermitted {
		t.Fatalf("code %s, want not_permitted", code)
	}
	if calls := e.ops.Recorded(); len(calls) != 0 {
		t.Fatalf("a refused call reached control: %+v", calls)
	}

	res := call(t, cs, "harness_list", `{}`)
	if res.IsError {
		t.Fatalf("list failed: %s", text(t, res))
	}
	want := `{"harnesses":[{"name":"web","state":"running"}]}`
	if got := text(t, res); got != want {
		t.Fatalf("text %s, want %s", got, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != want {
		t.Fatalf("structuredContent %s, want %s", sc, want)
	}
	calls := e.ops.Recorded()
	if len(calls) != 1 || calls[0].Op != "list" || calls[0].Args != `{}` ||
		calls[0].Caller != (api.Caller{Kind: api.Session, Harness: "web"}) {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestGrantedWriteRestartsWithArgumentsUnchanged(t *testing.T) {
	e := newEnv(t)
	e.auth.SetAllowed("web", "read", "write")
	e.ops.Results["restart"] = map[string]any{"results": []map[string]any{{"name": "sibling", "state": "running", "changed": true}}}
	cs, _ := e.connect(t, Identity{Harness: "web"})

	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, allTools) {
		t.Fatalf("tools %v, want %v", got, allTools)
	}
	args := `{"name":"sibling"}`
	res := call(t, cs, "harness_restart", args)
	if res.IsError {
		t.Fatalf("restart failed: %s", text(t, res))
	}
	if got := text(t, res); got != `{"results":[{"changed":true,"name":"sibling","state":"running"}]}` {
		t.Fatalf("text %s", got)
	}
	calls := e.ops.Recorded()
	if len(calls) != 1 || calls[0].Op != "restart" || calls[0].Args != args {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestUnattributedScopeFollowsAllowControl(t *testing.T) {
	e := newEnv(t)
	plain, _ := e.connect(t, Identity{})
	control, _ := e.connect(t, Identity{AllowControl: true})
	if got := mcptest.ToolNames(t, plain); !slices.Equal(got, readTools) {
		t.Fatalf("plain session tools %v", got)
	}
	if got := mcptest.ToolNames(t, control); !slices.Equal(got, allTools) {
		t.Fatalf("--allow-control session tools %v", got)
	}
	if code := errCode(t, call(t, plain, "harness_start", `{"name":"web"}`)); code != errcode.NotPermitted {
		t.Fatalf("code %s", code)
	}
	if res := call(t, control, "harness_start", `{"name":"web"}`); res.IsError {
		t.Fatalf("start with --allow-control: %s", text(t, res))
	}
	if calls := e.ops.Recorded(); len(calls) != 1 || calls[0].Op != "start" || calls[0].Caller.Harness != "" {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestAllowControlAddsNothingToAnAttributedSession(t *testing.T) {
	e := newEnv(t)
	cs, _ := e.connect(t, Identity{Harness: "web", AllowControl: true})
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
		t.Fatalf("tools %v, want read only", got)
	}
	res := call(t, cs, "harness_start", `{"name":"web"}`)
	if code := errCode(t, res); code != errcode.NotPermitted {
		t.Fatalf("code %s", code)
	}
	if !strings.Contains(text(t, res), "mcp_allow") {
		t.Fatalf("refusal does not say what grants it: %s", text(t, res))
	}
	if calls := e.ops.Recorded(); len(calls) != 0 {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestEmptyMCPAllowGrantsNothing(t *testing.T) {
	e := newEnv(t)
	e.auth.SetAllowed("web") // explicit empty list, not the default
	cs, _ := e.connect(t, Identity{Harness: "web"})
	if got := mcptest.ToolNames(t, cs); len(got) != 0 {
		t.Fatalf("tools %v, want none", got)
	}
	if code := errCode(t, call(t, cs, "harness_list", `{}`)); code != errcode.NotPermitted {
		t.Fatalf("code %s", code)
	}
}

func TestWideningThenRefreshNotifiesAndTakesEffect(t *testing.T) {
	e := newEnv(t)
	cs, n := e.connect(t, Identity{Harness: "web"})
	other, otherNotes := e.connect(t, Identity{Harness: "other"})
	if code := errCode(t, call(t, cs, "harness_stop", `{"name":"x"}`)); code != errcode.NotPermitted {
		t.Fatalf("before widening: %s", code)
	}

	e.auth.SetAllowed("web", "read", "write")
	e.m.Refresh()
	wait(t, n.tools, "tools/list_changed after widening")
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, allTools) {
		t.Fatalf("tools after widening %v", got)
	}
	if res := call(t, cs, "harness_stop", `{"name":"x"}`); res.IsError {
		t.Fatalf("stop after widening: %s", text(t, res))
	}

	// Narrowing is judged on the very next call, before the client re-lists
	// and even before Refresh runs.
	e.auth.SetAllowed("web", "read")
	if code := errCode(t, call(t, cs, "harness_stop", `{"name":"x"}`)); code != errcode.NotPermitted {
		t.Fatalf("after narrowing: %s", code)
	}
	e.m.Refresh()
	wait(t, n.tools, "tools/list_changed after narrowing")
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
		t.Fatalf("tools after narrowing %v", got)
	}

	// Nothing changed for the other session: its list is untouched.
	if got := mcptest.ToolNames(t, other); !slices.Equal(got, readTools) {
		t.Fatalf("other session tools %v", got)
	}
	select {
	case <-otherNotes.tools:
		t.Fatal("a session whose view did not change got list_changed")
	default:
	}
	if calls := e.ops.Recorded(); len(calls) != 1 || calls[0].Op != "stop" {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestUnknownToolIsAResultAndTheSessionGoesOn(t *testing.T) {
	e := newEnv(t)
	cs, _ := e.connect(t, Identity{AllowControl: true})
	for _, name := range []string{"nope", "harness_nope", "harness__x"} {
		if code := errCode(t, call(t, cs, name, `{}`)); code != errcode.UnknownTool {
			t.Fatalf("%s: code %s, want unknown_tool", name, code)
		}
	}
	if res := call(t, cs, "harness_daemon_info", `{}`); res.IsError {
		t.Fatalf("session broken after unknown tool: %s", text(t, res))
	}
}

func TestOperationErrorsKeepTheirCode(t *testing.T) {
	e := newEnv(t)
	e.ops.Errs["describe"] = errcode.Errorf(errcode.UnknownHarness, "harness %q", "ghost")
	cs, _ := e.connect(t, Identity{})
	res := call(t, cs, "harness_describe", `{"name":"ghost"}`)
	if code := errCode(t, res); code != errcode.UnknownHarness {
		t.Fatalf("code %s, want unknown_harness", code)
	}
	if !strings.Contains(text(t, res), "ghost") {
		t.Fatalf("message lost its context: %s", text(t, res))
	}
}

func TestInvalidArgumentsNeverReachControl(t *testing.T) {
	e := newEnv(t)
	cs, _ := e.connect(t, Identity{AllowControl: true})
	for _, c := range []struct{ tool, args string }{
		{"harness_logs", `{"name":"web","format":"html"}`},
		{"harness_describe", `{}`},
		{"harness_trigger", `{"name":"job","timeout_s":0}`},
		{"harness_list", `{"nmae":"typo"}`},
	} {
		if code := errCode(t, call(t, cs, c.tool, c.args)); code != errcode.InvalidArgument {
			t.Fatalf("%s %s: code %s", c.tool, c.args, code)
		}
	}
	if calls := e.ops.Recorded(); len(calls) != 0 {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestLogsArgumentsPassThrough(t *testing.T) {
	e := newEnv(t)
	e.ops.Results["logs"] = map[string]any{"format": "summary", "entries": []any{}, "next_cursor": 7, "truncated": false}
	cs, _ := e.connect(t, Identity{})
	args := `{"name":"web","format":"summary","cursor":5,"max_bytes":1024,"lines":10}`
	res := call(t, cs, "harness_logs", args)
	if res.IsError {
		t.Fatalf("logs: %s", text(t, res))
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &got); err != nil || got["next_cursor"] != float64(7) {
		t.Fatalf("result %s (%v)", text(t, res), err)
	}
	if calls := e.ops.Recorded(); len(calls) != 1 || calls[0].Args != args {
		t.Fatalf("recorded %+v", calls)
	}
}

func TestNilArrayResultIsAnEmptyList(t *testing.T) {
	e := newEnv(t)
	e.ops.Results["runs"] = []map[string]any(nil)
	cs, _ := e.connect(t, Identity{})
	if got := text(t, call(t, cs, "harness_runs", `{"name":"web","limit":2}`)); got != `{"runs":[]}` {
		t.Fatalf("text %s", got)
	}
}

func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	e.auth.SetToken("tok-web", "web")
	id, err := e.m.Authenticate("", true)
	if err != nil || id != (Identity{AllowControl: true}) {
		t.Fatalf("no token: %+v, %v", id, err)
	}
	id, err = e.m.Authenticate("tok-web", false)
	if err != nil || id.Harness != "web" {
		t.Fatalf("known token: %+v, %v", id, err)
	}
	_, err = e.m.Authenticate("tok-revoked", true)
	if !errors.Is(err, errcode.ErrNotPermitted) || !strings.Contains(err.Error(), "unknown or revoked token") {
		t.Fatalf("unknown token: %v", err)
	}
}

func TestScopeIsLookedUpPerCall(t *testing.T) {
	// The handshake happens under one mcp_allow and every call is judged by
	// the current one, with no Refresh in between.
	e := newEnv(t)
	e.auth.SetAllowed("web", "read", "write")
	cs, _ := e.connect(t, Identity{Harness: "web"})
	e.auth.SetAllowed("web", "read")
	if code := errCode(t, call(t, cs, "harness_restart", `{"name":"web"}`)); code != errcode.NotPermitted {
		t.Fatalf("code %s", code)
	}
	e.auth.SetAllowed("web", "write", "read")
	if res := call(t, cs, "harness_restart", `{"name":"web"}`); res.IsError {
		t.Fatalf("restart: %s", text(t, res))
	}
}

// A token dies with its run, and so does what it granted: an open session
// whose token was revoked may call nothing, facade or upstream.
func TestRevokedTokenGrantsNothing(t *testing.T) {
	e := newEnv(t)
	e.auth.SetToken("tok-boss", "boss")
	e.auth.SetAllowed("boss", "read", "write")
	id, err := e.m.Authenticate("tok-boss", false)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := e.connect(t, id)
	if res := call(t, cs, "harness_list", `{}`); res.IsError {
		t.Fatalf("before revocation: %+v", res)
	}
	e.auth.Revoke("tok-boss")
	for _, name := range []string{"harness_stop", "harness_list"} {
		if code := errCode(t, call(t, cs, name, `{"name":"x"}`)); code != errcode.NotPermitted {
			t.Fatalf("%s after revocation: %s", name, code)
		}
	}
	if n := len(e.ops.Recorded()); n != 1 {
		t.Fatalf("ops ran %d times; only the call before revocation may run", n)
	}
}
