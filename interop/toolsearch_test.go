//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Tool search. Four real upstreams (server-everything,
// server-memory, server-filesystem and manytools.mjs, a generated server
// of 300 tools) behind one daemon; a harness with mcp_tools = "search"
// and one with the default "all" open their own sessions with the
// TypeScript client. The search session's tools/list must be at most 5%
// of the full one's bytes, harness_find_tools must put the right tool in
// the top 3 for natural queries, and harness_call_tool must be refused
// exactly when the direct call is.

// searchQueries are natural requests and the tool that serves each.
var searchQueries = []struct{ query, want string }{
	{"open a bug report", "big__create_issue"},
	{"read the contents of a text file", "fs__read_text_file"},
	{"move a file to another folder", "fs__move_file"},
	{"rename a file", "fs__move_file"},
	{"add observations about an entity to the knowledge graph", "memory__add_observations"},
	{"create relations between entities", "memory__create_relations"},
	{"echo a message back to me", "everything__echo"},
	{"add up two numbers", "everything__get-sum"},
	{"send a bill to a customer", "big__create_invoice"},
	{"schedule a meeting on the calendar", "big__create_calendar_event"},
	{"post a message in a slack channel", "big__create_chat_message"},
	{"remove a DNS record", "big__delete_dns_record"},
	{"find customers by name", "big__search_customer"},
	{"how many support tickets are there", "big__count_support_ticket"},
	{"export invoices to a CSV file", "big__export_invoice"},
	{"edit an existing pull request", "big__update_pull_request"},
	{"delete a cloud server instance", "big__delete_virtual_machine"},
	{"list the git branches", "big__list_branch"},
	{"show a recursive tree of the directories", "fs__directory_tree"},
	{"search for nodes in the knowledge graph", "memory__search_nodes"},
	{"restore an archived wiki page", "big__restore_document"},
	{"details of the TLS certificate", "big__get_certificate"},
}

func TestTS_ToolSearchAcrossFourUpstreams(t *testing.T) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "note.txt"), []byte("search finds me"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf(`
[mcp.everything]
cmd = %q
args = ["stdio"]

[mcp.memory]
cmd = %q
env = { MEMORY_FILE_PATH = %q }

[mcp.fs]
cmd = %q
args = [%q]

[mcp.big]
cmd = %q
args = [%q]
`, bin("mcp-server-everything"), bin("mcp-server-memory"), filepath.Join(dir, "memory.jsonl"),
		bin("mcp-server-filesystem"), files, nodeBin, filepath.Join(interopDir, "manytools.mjs"))+
		tokenHarness("searcher", dir, `mcp_allow = ["read", "write"]`+"\nmcp_tools = \"search\"")+
		tokenHarness("lister", dir, `mcp_allow = ["read", "write"]`)+
		tokenHarness("reader", dir, `mcp_allow = ["read"]`+"\nmcp_tools = \"search\""))
	st := f.waitUpstreams("everything", "memory", "fs", "big")
	if st["big"].Tools != 300 {
		t.Fatalf("manytools lists %d tools, want 300", st["big"].Tools)
	}

	steps := []map[string]any{
		connectStep("s", f.bridgeAs(f.harnessToken(dir, "searcher"))),
		connectStep("l", f.bridgeAs(f.harnessToken(dir, "lister"))),
		connectStep("r", f.bridgeAs(f.harnessToken(dir, "reader"))),
		opStep("s", "listTools"), // 3
		opStep("l", "listTools"), // 4
	}
	const firstQuery = 5
	for _, q := range searchQueries {
		steps = append(steps, opStep("s", "callTool", "name", "harness_find_tools", "args", map[string]any{"query": q.query, "limit": 3}, "id", q.query))
	}
	// Parity: each call direct, then through harness_call_tool, in the
	// read-only search session (r) and the read-write one (s).
	parity := []struct {
		conn, name string
		args       map[string]any
	}{
		{"r", "big__create_issue", map[string]any{"repository": "x", "title": "t"}}, // write: refused for r
		{"s", "big__create_issue", map[string]any{"repository": "x", "title": "t"}}, // granted for s
		{"r", "big__get_issue", map[string]any{"id": "7"}},                          // read
		{"r", "fs__read_text_file", map[string]any{"path": filepath.Join(files, "note.txt")}},
		{"r", "fs__write_file", map[string]any{"path": filepath.Join(files, "x"), "content": "no"}},
		{"r", "memory__read_graph", map[string]any{}},
		{"r", "big__no_such_tool", map[string]any{}},
		{"r", "nowhere__tool", map[string]any{}},
		{"r", "harness_stop", map[string]any{"name": "lister"}}, // facade write
		{"r", "harness_list", map[string]any{}},
		{"s", "everything__get-sum", map[string]any{"a": 2, "b": 40}},
	}
	firstParity := len(steps)
	for _, p := range parity {
		steps = append(steps,
			opStep(p.conn, "callTool", "name", p.name, "args", p.args, "id", "direct "+p.name),
			opStep(p.conn, "callTool", "name", "harness_call_tool", "args", map[string]any{"name": p.name, "arguments": p.args}, "id", "via "+p.name))
	}
	c, out := runTS(t, steps...)

	// Bytes of the tools each session is told about, as the client got them.
	search := toolsByName(t, c, out[3])
	all := toolsByName(t, c, out[4])
	size := func(m map[string]json.RawMessage) int {
		n := 0
		for _, raw := range m {
			n += len(raw)
		}
		return n
	}
	if _, ok := search["harness_find_tools"]; !ok {
		t.Fatalf("search session lacks harness_find_tools: %v", slices.Sorted(mapKeys(search)))
	}
	for name := range search {
		if strings.Contains(name, "__") {
			t.Errorf("search session lists upstream tool %s", name)
		}
	}
	if len(all) < 300+13+9+14 {
		t.Fatalf("all session lists %d tools", len(all))
	}
	// The facade tools are listed in both modes (docs/design/mcp.md), the same for
	// the same grant.
	facadeBytes := 0
	for name, raw := range search {
		if strings.HasPrefix(name, "harness_") && name != "harness_find_tools" && name != "harness_call_tool" {
			var a, b any
			if json.Unmarshal(raw, &a) != nil || json.Unmarshal(all[name], &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("facade tool %s differs between the modes", name)
			}
			facadeBytes += len(raw)
		}
	}
	ratio := float64(size(search)) / float64(size(all))
	beyond := float64(size(search)-facadeBytes) / float64(size(all)-facadeBytes)
	t.Logf("tools/list: search mode %d tools, %d bytes; all mode %d tools, %d bytes; ratio %.2f%% (facade alone %d bytes, %.2f%% of all); beyond the facade %.2f%%",
		len(search), size(search), len(all), size(all), 100*ratio, facadeBytes, 100*float64(facadeBytes)/float64(size(all)), 100*beyond)
	// The target is on the whole list: the facade tools, listed in
	// both modes, must stay lean enough that search mode is at most 5% of
	// all mode; what search mode adds beyond them is held to it too.
	if ratio > 0.05 {
		t.Errorf("search mode lists %.2f%% of all mode's bytes (the facade alone %d bytes), want <= 5%%: keep the facade tools' descriptions and schemas lean", 100*ratio, facadeBytes)
	}
	if beyond > 0.05 {
		t.Errorf("beyond the facade, search mode lists %.1f%% of all mode's bytes, want <= 5%%", 100*beyond)
	}

	hits := 0
	for i, q := range searchQueries {
		var r toolResult
		c.must(out[firstQuery+i], &r)
		var found struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if r.IsError || json.Unmarshal([]byte(r.text()), &found) != nil {
			t.Errorf("find %q: %s", q.query, r.text())
			continue
		}
		var names []string
		for _, ft := range found.Tools {
			names = append(names, ft.Name)
			if ft.Name == q.want && !sameJSON(ft.InputSchema, all[q.want], "inputSchema") {
				t.Errorf("find %q: %s's schema differs from the listed one", q.query, q.want)
			}
		}
		if slices.Contains(names, q.want) {
			hits++
		} else {
			t.Errorf("find %q: top 3 %v lacks %s", q.query, names, q.want)
		}
	}
	t.Logf("right tool in the top 3 for %d of %d queries", hits, len(searchQueries))

	for i, p := range parity {
		direct, via := out[firstParity+2*i], out[firstParity+2*i+1]
		dc, dm := refusal(t, c, direct)
		vc, vm := refusal(t, c, via)
		if dc != vc {
			t.Errorf("%s on %s: direct %q (%s), via harness_call_tool %q (%s)", p.name, p.conn, dc, dm, vc, vm)
		}
		if dc == "" && dm != vm && !strings.HasPrefix(p.name, "harness_") {
			t.Errorf("%s on %s: direct answer %q, via %q", p.name, p.conn, dm, vm)
		}
		t.Logf("%s on %s: %q", p.name, p.conn, dc)
	}
	if c, _ := refusal(t, c, out[firstParity]); c != "not_permitted" {
		t.Errorf("a write tool for a read session: %q, want not_permitted", c)
	}
	if c, _ := refusal(t, c, out[firstParity+2]); c != "" {
		t.Errorf("a granted write tool: %q, want success", c)
	}

	// The call log records calls through harness_call_tool under the
	// tool's own name, with the same outcome as the direct call.
	var log struct {
		Calls []struct{ Caller, Harness, Tool, Outcome string } `json:"calls"`
	}
	f.MustJSON(&log, "calls", "--harness", "reader", "--tool", "big__create_issue")
	if len(log.Calls) != 2 || log.Calls[0].Outcome != "not_permitted" || log.Calls[1].Outcome != "not_permitted" {
		t.Errorf("call log for reader's big__create_issue: %+v", log.Calls)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// sameJSON compares field of tool object b with a as JSON values.
func sameJSON(a, b json.RawMessage, field string) bool {
	var mb map[string]json.RawMessage
	if json.Unmarshal(b, &mb) != nil {
		return false
	}
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(mb[field], &vb) == nil && fmt.Sprint(va) == fmt.Sprint(vb)
}
