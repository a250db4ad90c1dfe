package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Issue 32: server-to-client requests. server-everything's elicitation
// and sampling tools ask their client back during the call; through
// harness the question reaches the TypeScript client whose call it is
// when that client declared the capability, and the upstream gets a clear
// error otherwise, and keeps running either way.
func TestTS_ElicitationAndSamplingReachTheCallingClient(t *testing.T) {
	f := newFleet(t, fmt.Sprintf("[mcp.everything]\ncmd = %q\nargs = [\"stdio\"]\n", bin("mcp-server-everything")))
	before := f.waitUpstreams("everything")["everything"]

	capable := connectStep("cap", f.bridge("--allow-control"))
	capable["capabilities"] = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
	capable["elicit"] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace"}}
	capable["sample"] = map[string]any{"role": "assistant", "model": "interop-model", "stopReason": "endTurn",
		"content": map[string]any{"type": "text", "text": "forty-two"}}
	c, out := runTS(t,
		capable,
		connectStep("bare", f.bridge("--allow-control")),
		opStep("cap", "callTool", "name", "everything__trigger-elicitation-request"),                                                   // 2
		opStep("cap", "callTool", "name", "everything__trigger-sampling-request", "args", map[string]any{"prompt": "six times seven"}), // 3
		opStep("cap", "asked"), // 4
		opStep("bare", "callTool", "name", "everything__trigger-elicitation-request"),                                                   // 5
		opStep("bare", "callTool", "name", "everything__trigger-sampling-request", "args", map[string]any{"prompt": "six times seven"}), // 6
		opStep("bare", "callTool", "name", "everything__echo", "args", map[string]any{"message": "still here"}),                         // 7
	)
	var r toolResult
	c.must(out[2], &r)
	if r.IsError || !strings.Contains(r.text(), "Ada Lovelace") {
		t.Errorf("elicitation through harness: %s", r.text())
	}
	c.must(out[3], &r)
	if r.IsError || !strings.Contains(r.text(), "forty-two") || !strings.Contains(r.text(), "interop-model") {
		t.Errorf("sampling through harness: %s", r.text())
	}
	var asked struct {
		Asked []struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"asked"`
	}
	c.must(out[4], &asked)
	if len(asked.Asked) != 2 || asked.Asked[0].Method != "elicitation/create" || asked.Asked[1].Method != "sampling/createMessage" ||
		!strings.Contains(string(asked.Asked[0].Params), "Your full, legal name") || !strings.Contains(string(asked.Asked[1].Params), "six times seven") {
		t.Errorf("the capable client was asked %+v", asked.Asked)
	}
	for _, i := range []int{5, 6} {
		var e toolResult
		c.must(out[i], &e)
		if !e.IsError || !strings.Contains(e.text(), "does not support") {
			t.Errorf("step %d: a client without the capability: %s", i, e.text())
		}
	}
	c.must(out[7], &r)
	if r.IsError || !strings.Contains(r.text(), "still here") {
		t.Errorf("echo after the refusals: %s", r.text())
	}
	if after := f.upstreams()["everything"]; after.PID != before.PID || after.State != "running" {
		t.Errorf("the upstream did not keep running: before %+v, after %+v", before, after)
	}
}

// Issue 32: upstream prompts beside the markdown prompts. server-everything's
// prompts are listed as everything__NAME to a session granted read on it,
// exclude_prompts hides one, a session without read on the upstream sees
// none of them, and prompts/get reaches the upstream with its arguments.
func TestTS_UpstreamPromptsBesideMarkdownPrompts(t *testing.T) {
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(prompts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prompts, "review.md"), []byte("---\ndescription: Review\n---\nReview it.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fmt.Sprintf("[mcp.prompts]\npaths = [%q]\n\n[mcp.everything]\ncmd = %q\nargs = [\"stdio\"]\nexclude_prompts = [\"completable-*\"]\n",
		prompts, bin("mcp-server-everything"))+tokenHarness("narrow", dir, `mcp_allow = ["harness:read"]`))
	f.waitUpstreams("everything")
	c, out := runTS(t,
		connectStep("a", f.bridge()),
		connectStep("n", f.bridgeAs(f.harnessToken(dir, "narrow"))),
		opStep("a", "listPrompts"), // 2
		opStep("n", "listPrompts"), // 3
		opStep("a", "getPrompt", "name", "everything__args-prompt", "args", map[string]string{"city": "Lisbon", "state": "Lisboa"}),   // 4
		opStep("a", "getPrompt", "name", "everything__args-prompt", "args", map[string]string{}),                                      // 5: missing city
		opStep("n", "getPrompt", "name", "everything__simple-prompt"),                                                                 // 6: not granted
		opStep("a", "getPrompt", "name", "everything__completable-prompt", "args", map[string]string{"department": "x", "name": "y"}), // 7: excluded
		opStep("a", "getPrompt", "name", "review"),                                                                                    // 8
	)
	names := func(s step) []string {
		var r struct{ Prompts []struct{ Name string } }
		c.must(s, &r)
		var out []string
		for _, p := range r.Prompts {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(out[2]), []string{"everything__args-prompt", "everything__resource-prompt", "everything__simple-prompt", "review"}; !slices.Equal(got, want) {
		t.Errorf("read session lists prompts %v, want %v", got, want)
	}
	if got := names(out[3]); !slices.Equal(got, []string{"review"}) {
		t.Errorf("a session without read on everything lists %v", got)
	}
	var got struct {
		Messages []struct {
			Content struct{ Text string } `json:"content"`
		} `json:"messages"`
	}
	c.must(out[4], &got)
	if len(got.Messages) == 0 || !strings.Contains(got.Messages[0].Content.Text, "Lisbon") {
		t.Errorf("everything__args-prompt: %s", out[4].Result)
	}
	for _, i := range []int{5, 6, 7} {
		if out[i].OK {
			t.Errorf("step %d succeeded: %s", i, out[i].Result)
		}
	}
	if !strings.Contains(out[6].Error, "not_permitted") || !strings.Contains(out[7].Error, "no prompt") {
		t.Errorf("refusals: %q / %q", out[6].Error, out[7].Error)
	}
	c.must(out[8], nil)
}
