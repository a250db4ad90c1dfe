package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// listingBytes is the size of a session's whole tools/list answer.
func listingBytes(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestScenario_SearchModeListingStaysSmall: with 300 upstream tools a
// session in search mode lists at most 2 KB, and every facade tool its
// grant covers is still found by harness_find_tools and callable, directly
// and through harness_call_tool.
func TestScenario_SearchModeListingStaysSmall(t *testing.T) {
	e, ma, _ := searchEnv(t)
	var many []*mcp.Tool
	for i := range 300 {
		many = append(many, &mcp.Tool{Name: fmt.Sprintf("big__tool_%03d", i), Description: fmt.Sprintf("Tool number %d of a large upstream: does thing %d to a widget.", i, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"widget":{"type":"string","description":"which widget"}}}`), Annotations: roHint})
	}
	e.ups.tools[""] = many
	e.auth.Add("tok", "agent", "read", "write", "input")
	ma.set("agent", api.ToolsSearch)
	cs, _ := e.connect(t, Identity{Harness: "agent", Token: "tok"})

	size := listingBytes(t, cs)
	t.Logf("search mode, 300 upstream tools, grant read+write+input: tools/list is %d bytes", size)
	if size > 2048 {
		t.Fatalf("search-mode listing is %d bytes, want <= 2048", size)
	}
	for _, ft := range facade.Tools() {
		// A model searches with the words of a tool's description.
		words := strings.Join(strings.Fields(ft.Description)[:min(6, len(strings.Fields(ft.Description)))], " ")
		got := find(t, cs, words+" "+strings.TrimPrefix(ft.Name, "harness_"), 5)
		found := false
		for _, f := range got.Tools {
			found = found || f.Name == ft.Name
		}
		if !found {
			t.Errorf("%s not found by %q: %+v", ft.Name, words, got.Tools)
		}
	}
	// Unlisted facade tools are called as if listed: harness_jobs (read)
	// answers directly and through harness_call_tool.
	if res := call(t, cs, "harness_jobs", `{}`); res.IsError {
		t.Fatalf("direct call of an unlisted facade tool: %s", text(t, res))
	}
	if res := call(t, cs, CallToolName, `{"name":"harness_jobs","arguments":{}}`); res.IsError {
		t.Fatalf("harness_call_tool of an unlisted facade tool: %s", text(t, res))
	}

	// For the record: the same session listing everything.
	ma.set("agent", api.ToolsAll)
	e.m.Refresh()
	deadline := time.Now().Add(10 * time.Second)
	for listingBytes(t, cs) == size && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the refresh is asynchronous to the client
	}
	t.Logf("mcp_tools = all: tools/list is %d bytes", listingBytes(t, cs))
}
