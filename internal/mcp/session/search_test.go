package session

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// modeAuth is the fake authority that also knows each harness's mcp_tools.
type modeAuth struct {
	*mcptest.Auth
	mu       sync.Mutex
	modes    map[string]api.ToolMode
	operator api.ToolMode
}

func (a *modeAuth) ToolMode(h string) api.ToolMode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.modes[h]
}

func (a *modeAuth) OperatorToolMode() api.ToolMode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.operator
}

func (a *modeAuth) set(h string, m api.ToolMode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.modes[h] = m
}

func searchEnv(t *testing.T) (*env, *modeAuth, *fakeRecorder) {
	t.Helper()
	e := newEnv(t)
	e.m.Close()
	ma := &modeAuth{Auth: e.auth, modes: map[string]api.ToolMode{}}
	e.m = NewManager(e.ops, ma, e.ups, func() Prompts { return e.prompts }, nil, "test")
	t.Cleanup(e.m.Close)
	rec := &fakeRecorder{}
	e.m.SetCallRecorder(rec)
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	e.ups.tools[""] = []*mcp.Tool{
		{Name: "gh__create_issue", Description: "Open a new issue in a repository.", InputSchema: schema(`"repo":{"type":"string"},"title":{"type":"string"}`)},
		{Name: "gh__list_issues", Description: "List the issues of a repository.", InputSchema: schema(`"repo":{"type":"string"}`), Annotations: roHint},
		{Name: "fs__read_file", Description: "Read the contents of a file.", InputSchema: schema(`"path":{"type":"string"}`), Annotations: roHint},
		{Name: "fs__write_file", Description: "Write text to a file, replacing it.", InputSchema: schema(`"path":{"type":"string"},"content":{"type":"string"}`)},
	}
	return e, ma, rec
}

type foundTools struct {
	Tools []struct {
		Name        string          `json:"name"`
		Class       string          `json:"class"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	Searched int `json:"searched"`
}

func find(t *testing.T, cs *mcp.ClientSession, query string, limit int) foundTools {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"query": query, "limit": limit})
	res := call(t, cs, FindToolsName, string(args))
	if res.IsError {
		t.Fatalf("find %q: %s", query, text(t, res))
	}
	var out foundTools
	if err := json.Unmarshal([]byte(text(t, res)), &out); err != nil {
		t.Fatalf("find %q: %v", query, err)
	}
	return out
}

func TestScenario_SearchModeListsTheTwoSearchToolsAndAFewFacadeTools(t *testing.T) {
	e, ma, _ := searchEnv(t)
	e.auth.Add("tok", "agent", "read", "gh:write")
	ma.set("agent", api.ToolsSearch)
	cs, n := e.connect(t, Identity{Harness: "agent", Token: "tok"})

	want := []string{CallToolName, "harness_describe", FindToolsName, "harness_list"}
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("search mode lists %v, want %v", got, want)
	}

	// Back to all: the upstream tools come back and the client is told.
	ma.set("agent", api.ToolsAll)
	e.m.Refresh()
	wait(t, n.tools, "list_changed after the mode changed")
	got := mcptest.ToolNames(t, cs)
	for _, name := range []string{"gh__create_issue", "gh__list_issues", "fs__read_file"} {
		if !slices.Contains(got, name) {
			t.Errorf("all mode lacks %s: %v", name, got)
		}
	}
	if slices.Contains(got, FindToolsName) || slices.Contains(got, "fs__write_file") {
		t.Errorf("all mode lists a search tool or an ungranted tool: %v", got)
	}
	if c := errCode(t, call(t, cs, FindToolsName, `{"query":"file"}`)); c != errcode.UnknownTool {
		t.Errorf("find in all mode: %s, want unknown_tool", c)
	}
}

func TestScenario_FindToolsRanksOnlyWhatTheGrantCovers(t *testing.T) {
	e, ma, _ := searchEnv(t)
	e.auth.Add("tok", "agent", "read", "gh:write")
	ma.set("agent", api.ToolsSearch)
	cs, _ := e.connect(t, Identity{Harness: "agent", Token: "tok"})

	got := find(t, cs, "open a new issue", 3)
	if len(got.Tools) == 0 || got.Tools[0].Name != "gh__create_issue" || got.Tools[0].Class != "write" {
		t.Fatalf("open a new issue: %+v", got)
	}
	if len(got.Tools[0].InputSchema) == 0 || !json.Valid(got.Tools[0].InputSchema) {
		t.Errorf("no input schema: %s", got.Tools[0].InputSchema)
	}
	// fs:write is not granted: the writer is never found, the reader is.
	got = find(t, cs, "write text to a file", 10)
	for _, f := range got.Tools {
		if f.Name == "fs__write_file" {
			t.Fatalf("found a tool outside the grant: %+v", got)
		}
	}
	if len(got.Tools) == 0 || got.Tools[0].Name != "fs__read_file" {
		t.Errorf("write text to a file (only the reader granted): %+v", got)
	}
	if want := len(readTools) + 3; got.Searched != want {
		t.Errorf("searched %d tools, want %d (read facade + 3 granted upstream)", got.Searched, want)
	}
	for _, bad := range []string{`{}`, `{"query":""}`, `{"query":"x","limit":0}`, `{"query":"x","limit":51}`, `{"query":"x","extra":1}`} {
		if c := errCode(t, call(t, cs, FindToolsName, bad)); c != errcode.InvalidArgument {
			t.Errorf("find %s: %s, want invalid_argument", bad, c)
		}
	}
}

func TestScenario_CallToolIsRefusedExactlyWhenTheDirectCallWouldBe(t *testing.T) {
	e, ma, rec := searchEnv(t)
	e.auth.Add("tok", "agent", "read", "gh:write")
	ma.set("agent", api.ToolsSearch)
	cs, _ := e.connect(t, Identity{Harness: "agent", Token: "tok"})

	cases := []struct{ name, args string }{
		{"gh__create_issue", `{"repo":"a","title":"b"}`}, // write, granted
		{"gh__list_issues", `{"repo":"a"}`},              // read
		{"fs__read_file", `{"path":"/x"}`},               // read
		{"fs__write_file", `{"path":"/x"}`},              // write, not granted
		{"fs__nope", `{}`},                               // unknown tool, known namespace
		{"zz__tool", `{}`},                               // unknown namespace
		{"harness_list", `{}`},                           // facade read
		{"harness_stop", `{"name":"x"}`},                 // facade write, not granted
		{"harness_nope", `{}`},                           // unknown facade tool
		{"harness_describe", `{"bogus":1}`},              // facade, bad arguments
	}
	for _, c := range cases {
		direct := call(t, cs, c.name, c.args)
		via := call(t, cs, CallToolName, `{"name":"`+c.name+`","arguments":`+c.args+`}`)
		if direct.IsError != via.IsError {
			t.Errorf("%s: direct isError %v, via harness_call_tool %v (%s / %s)", c.name, direct.IsError, via.IsError, text(t, direct), text(t, via))
			continue
		}
		if direct.IsError {
			if dc, vc := errCode(t, direct), errCode(t, via); dc != vc {
				t.Errorf("%s: direct %s, via %s", c.name, dc, vc)
			}
		} else if text(t, direct) != text(t, via) {
			t.Errorf("%s: direct %q, via %q", c.name, text(t, direct), text(t, via))
		}
		// The call log records both under the tool's own name and outcome.
		recs := rec.take()
		if len(recs) != 2 || recs[0].Tool != c.name || recs[1].Tool != c.name || recs[0].Outcome != recs[1].Outcome || recs[0].Class != recs[1].Class {
			t.Errorf("%s: call log %+v", c.name, recs)
		}
	}
	// The search tools do not call themselves, and arguments are an object.
	for _, bad := range []string{`{"name":"harness_find_tools","arguments":{"query":"x"}}`, `{"name":"gh__list_issues","arguments":[1]}`, `{}`} {
		if c := errCode(t, call(t, cs, CallToolName, bad)); c != errcode.InvalidArgument {
			t.Errorf("call %s: %s, want invalid_argument", bad, c)
		}
	}
}

func TestScenario_OperatorTokenSearchMode(t *testing.T) {
	e, ma, _ := searchEnv(t)
	ma.mu.Lock()
	ma.operator = api.ToolsSearch
	ma.mu.Unlock()
	cs, _ := e.connect(t, Identity{Operator: true})
	got := mcptest.ToolNames(t, cs)
	if !slices.Contains(got, FindToolsName) || slices.Contains(got, "gh__list_issues") {
		t.Fatalf("operator in search mode lists %v", got)
	}
	if f := find(t, cs, "list issues of a repository", 1); len(f.Tools) != 1 || f.Tools[0].Name != "gh__list_issues" {
		t.Errorf("operator find: %+v", f)
	}
	// Unattributed sessions always list everything.
	cs2, _ := e.connect(t, Identity{})
	if got := mcptest.ToolNames(t, cs2); slices.Contains(got, FindToolsName) || !slices.Contains(got, "gh__list_issues") {
		t.Errorf("unattributed lists %v", got)
	}
}
