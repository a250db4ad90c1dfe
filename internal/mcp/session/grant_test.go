package session

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// twoUpstreams gives e a read and a write tool in each of gitea and jira.
func twoUpstreams(e *env) {
	obj := json.RawMessage(`{"type":"object"}`)
	e.ups.mu.Lock()
	defer e.ups.mu.Unlock()
	e.ups.tools[""] = []*mcp.Tool{
		{Name: "gitea__search", InputSchema: obj, Annotations: roHint},
		{Name: "gitea__delete_repo", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool)}},
		{Name: "jira__issue", InputSchema: obj, Annotations: roHint},
		{Name: "jira__create", InputSchema: obj},
	}
}

func upstreamNames(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasPrefix(n, "harness_") })
}

func TestNamespacedGrantsDecideTheView(t *testing.T) {
	e := newEnv(t)
	twoUpstreams(e)
	for _, c := range []struct {
		allow  []string
		facade []string
		ups    []string
	}{
		{[]string{"read"}, readTools, []string{"gitea__search", "jira__issue"}},
		{[]string{"read", "gitea:write"}, readTools, []string{"gitea__delete_repo", "gitea__search", "jira__issue"}},
		{[]string{"harness:read"}, readTools, nil},
		{[]string{"gitea:read"}, nil, []string{"gitea__search"}},
		{[]string{"read", "harness:write"}, allTools, []string{"gitea__search", "jira__issue"}},
		{[]string{"read", "write"}, allTools, []string{"gitea__delete_repo", "gitea__search", "jira__create", "jira__issue"}},
		{[]string{"write", "input"}, []string{"harness_answer", "harness_delegate", "harness_land", "harness_new", "harness_restart", "harness_rm", "harness_send", "harness_start", "harness_stop", "harness_trigger"}, []string{"gitea__delete_repo", "jira__create"}},
	} {
		e.auth.SetAllowed("web", c.allow...)
		cs, _ := e.connect(t, Identity{Harness: "web"})
		names := mcptest.ToolNames(t, cs)
		facade := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !strings.HasPrefix(n, "harness_") })
		if !slices.Equal(facade, c.facade) || !slices.Equal(upstreamNames(names), c.ups) {
			t.Errorf("mcp_allow %q lists %v, want facade %v and upstream %v", c.allow, names, c.facade, c.ups)
		}
	}
}

func TestACallOutsideTheGrantIsNotPermittedNamingTheGrant(t *testing.T) {
	e := newEnv(t)
	twoUpstreams(e)
	e.auth.SetAllowed("web", "read", "gitea:write")
	cs, _ := e.connect(t, Identity{Harness: "web"})

	res := call(t, cs, "jira__create", `{}`)
	if code := errCode(t, res); code != errcode.NotPermitted {
		t.Fatalf("jira__create: %s, want not_permitted (not unknown_tool)", code)
	}
	var body errcode.Body
	if err := json.Unmarshal([]byte(text(t, res)), &body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"needs jira:write", `mcp_allow is ["read", "gitea:write"]`} {
		if !strings.Contains(body.Message, want) {
			t.Errorf("refusal %q does not say %q", body.Message, want)
		}
	}
	res = call(t, cs, "harness_stop", `{"name":"x"}`)
	if code := errCode(t, res); code != errcode.NotPermitted || !strings.Contains(text(t, res), "needs harness:write") {
		t.Fatalf("harness_stop: %s %q", code, text(t, res))
	}
	if out := call(t, cs, "gitea__delete_repo", `{}`); out.IsError {
		t.Fatalf("gitea__delete_repo is granted: %s", text(t, out))
	}
	e.ups.mu.Lock()
	calls := slices.Clone(e.ups.calls)
	e.ups.mu.Unlock()
	if len(calls) != 1 || calls[0].name != "gitea__delete_repo" {
		t.Fatalf("upstream calls %+v: a refused call reached the upstream", calls)
	}
	if ops := e.ops.Recorded(); len(ops) != 0 {
		t.Fatalf("control calls %+v", ops)
	}

	// A tool the upstream does not list: unknown where the session holds
	// something in the namespace, not_permitted where it holds nothing.
	if code := errCode(t, call(t, cs, "gitea__nope", `{}`)); code != errcode.UnknownTool {
		t.Fatalf("gitea__nope: %s", code)
	}
	e.auth.SetAllowed("web", "harness:read")
	res = call(t, cs, "gitea__nope", `{}`)
	if code := errCode(t, res); code != errcode.NotPermitted || !strings.Contains(text(t, res), "granted nothing in gitea") {
		t.Fatalf("gitea__nope under harness:read: %s %q", code, text(t, res))
	}
	if code := errCode(t, call(t, cs, "gitea__search", `{}`)); code != errcode.NotPermitted {
		t.Fatalf("gitea__search under harness:read: %s", code)
	}
}

func TestAllowControlNeverGrantsInput(t *testing.T) {
	e := newEnv(t)
	l := e.m.build(Identity{AllowControl: true})
	g := l.grant()
	if !g.Allows(api.FacadeNamespace, api.Write) || !g.Allows("gitea", api.Write) || g.Allows(api.FacadeNamespace, api.Input) {
		t.Fatalf("--allow-control grant %s", g)
	}
	err := l.permit(g, "harness_send", api.FacadeNamespace, api.Input)
	if errcode.Of(err) != errcode.NotPermitted || !strings.Contains(err.Error(), "needs harness:input") ||
		!strings.Contains(err.Error(), "never input") {
		t.Fatalf("input under --allow-control: %v", err)
	}
	if g := e.m.build(Identity{}).grant(); !slices.Equal(g.Strings(), []string{"read"}) {
		t.Fatalf("plain unattributed grant %s", g)
	}
}

// The operator token's grant is the live config, like a harness's: a
// widening reaches an open session with list_changed, a narrowing holds
// from the next call.
func TestOperatorGrantIsLive(t *testing.T) {
	e := newEnv(t)
	twoUpstreams(e)
	cs, n := e.connect(t, Identity{Operator: true})
	if got := mcptest.ToolNames(t, cs); !slices.Equal(upstreamNames(got), []string{"gitea__search", "jira__issue"}) || slices.Contains(got, "harness_stop") {
		t.Fatalf("operator by default lists %v", got)
	}
	e.auth.SetOperator("read", "harness:write", "jira:write")
	e.m.Refresh()
	wait(t, n.tools, "list_changed after widening the operator grant")
	got := mcptest.ToolNames(t, cs)
	if !slices.Contains(got, "harness_stop") || !slices.Contains(got, "jira__create") || slices.Contains(got, "gitea__delete_repo") {
		t.Fatalf("operator after widening lists %v", got)
	}
	if res := call(t, cs, "harness_stop", `{"name":"x"}`); res.IsError {
		t.Fatalf("operator stop: %s", text(t, res))
	}
	e.auth.SetOperator("read")
	res := call(t, cs, "jira__create", `{}`)
	if code := errCode(t, res); code != errcode.NotPermitted || !strings.Contains(text(t, res), "mcp_http_operator_allow") {
		t.Fatalf("operator after narrowing: %s %q", code, text(t, res))
	}
}

// An upstream tool that changes class (a re-list, or a new read_tools)
// reaches exactly the sessions whose view it changes.
func TestReclassifiedToolReachesTheSessionsItConcerns(t *testing.T) {
	e := newEnv(t)
	twoUpstreams(e)
	e.auth.SetAllowed("reader", "read")
	e.auth.SetAllowed("writer", "read", "write")
	reader, rn := e.connect(t, Identity{Harness: "reader"})
	writer, wn := e.connect(t, Identity{Harness: "writer"})
	mcptest.ToolNames(t, reader)
	mcptest.ToolNames(t, writer)

	e.ups.mu.Lock()
	e.ups.tools[""][3] = &mcp.Tool{Name: "jira__create", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: roHint}
	e.ups.mu.Unlock()
	e.m.Refresh()
	wait(t, rn.tools, "list_changed for the reader, which now sees jira__create")
	if !slices.Contains(mcptest.ToolNames(t, reader), "jira__create") {
		t.Fatal("reader does not see jira__create once it is read")
	}
	if res := call(t, reader, "jira__create", `{}`); res.IsError {
		t.Fatalf("reader calls the now-read tool: %s", text(t, res))
	}
	// The writer saw jira__create before and after; only its annotations
	// changed, which is a change of the tool definition, so it re-lists too.
	wait(t, wn.tools, "list_changed for the writer, whose jira__create changed its annotations")
}

// A client checks structuredContent against the output schema of the tool
// it listed, errors included (the TypeScript SDK does): a refusal of such a
// tool carries its {code, message} body in the text only. A tool the
// session was never shown with a schema keeps the structured body.
func TestRefusalOfATypedToolHasNoStructuredBody(t *testing.T) {
	e := newEnv(t)
	obj := json.RawMessage(`{"type":"object"}`)
	out := json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}},"required":["content"]}`)
	e.ups.mu.Lock()
	e.ups.tools[""] = []*mcp.Tool{
		{Name: "fs__write_file", InputSchema: obj, OutputSchema: out},
		{Name: "fs__move_file", InputSchema: obj},
	}
	e.ups.mu.Unlock()
	e.auth.SetAllowed("web", "read", "write")
	cs, _ := e.connect(t, Identity{Harness: "web"})
	if got := upstreamNames(mcptest.ToolNames(t, cs)); !slices.Equal(got, []string{"fs__move_file", "fs__write_file"}) {
		t.Fatalf("tools %v", got)
	}

	e.auth.SetAllowed("web", "read") // narrowed; the client still has its listing
	res := call(t, cs, "fs__write_file", `{}`)
	var body errcode.Body
	if err := json.Unmarshal([]byte(text(t, res)), &body); err != nil || !res.IsError || body.Code != errcode.NotPermitted {
		t.Fatalf("refusal %+v: %q (%v)", res, text(t, res), err)
	}
	if res.StructuredContent != nil {
		t.Fatalf("structuredContent %v on a refusal of a tool with an output schema", res.StructuredContent)
	}
	if code := errCode(t, call(t, cs, "fs__move_file", `{}`)); code != errcode.NotPermitted {
		t.Fatalf("fs__move_file: %s (with its structured body)", code)
	}
}
