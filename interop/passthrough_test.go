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
)

// Server-to-client requests. server-everything's elicitation
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

// Upstream prompts beside the markdown prompts. server-everything's
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

// Upstream resources and templates under harness://KEY/ URIs:
// listed to a session granted read on the upstream (exclude_resources
// hides some), read through harness with the upstream's contents, a
// template's expansion read too, and a subscription forwarded so the
// upstream's resources/updated reaches the subscriber.
func TestTS_UpstreamResourcesMappedReadAndSubscribed(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, fmt.Sprintf("[mcp.everything]\ncmd = %q\nargs = [\"stdio\"]\nexclude_resources = [\"demo://resource/static/document/startup.md\"]\n",
		bin("mcp-server-everything"))+tokenHarness("narrow", dir, `mcp_allow = ["harness:read"]`))
	f.waitUpstreams("everything")
	const arch = "harness://everything/demo://resource/static/document/architecture.md"
	c, out := runTS(t,
		connectStep("a", f.bridge("--allow-control")),
		connectStep("n", f.bridgeAs(f.harnessToken(dir, "narrow"))),
		opStep("a", "listResources"),                                                                          // 2
		opStep("n", "listResources"),                                                                          // 3
		opStep("a", "readResource", "uri", arch),                                                              // 4
		opStep("a", "readResource", "uri", "harness://everything/demo://resource/dynamic/text/7"),             // 5: a template's expansion
		opStep("a", "readResource", "uri", "harness://everything/demo://resource/static/document/startup.md"), // 6: excluded
		opStep("n", "readResource", "uri", arch),                                                              // 7: not granted
		opStep("a", "subscribe", "uri", arch),                                                                 // 8
		opStep("a", "callTool", "name", "everything__toggle-subscriber-updates"),                              // 9
		opStep("a", "waitNotification", "method", "notifications/resources/updated", "timeoutMs", 30000),      // 10
		opStep("a", "unsubscribe", "uri", arch),                                                               // 11
	)
	var listed struct {
		Resources []struct{ URI string }         `json:"resources"`
		Templates []struct{ URITemplate string } `json:"templates"`
	}
	c.must(out[2], &listed)
	var uris []string
	for _, r := range listed.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, arch) || slices.Contains(uris, "harness://everything/demo://resource/static/document/startup.md") || len(uris) != 6 {
		t.Errorf("resources %v", uris)
	}
	var tmpls []string
	for _, tm := range listed.Templates {
		tmpls = append(tmpls, tm.URITemplate)
	}
	if len(tmpls) != 2 || !slices.Contains(tmpls, "harness://everything/demo://resource/dynamic/text/{resourceId}") {
		t.Errorf("templates %+v", listed.Templates)
	}
	c.must(out[3], &listed)
	if len(listed.Resources) != 0 || len(listed.Templates) != 0 {
		t.Errorf("a session without read on everything lists %+v", listed)
	}
	var read struct {
		Contents []struct{ URI, Text string } `json:"contents"`
	}
	c.must(out[4], &read)
	if len(read.Contents) != 1 || read.Contents[0].URI != arch || read.Contents[0].Text == "" {
		t.Errorf("read %s: %s", arch, out[4].Result)
	}
	c.must(out[5], &read)
	if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "7") || !strings.HasPrefix(read.Contents[0].URI, "harness://everything/") {
		t.Errorf("read a template's expansion: %s", out[5].Result)
	}
	if out[6].OK || !strings.Contains(out[6].Error, "exclude_resources") {
		t.Errorf("excluded resource: ok=%v %s", out[6].OK, out[6].Error)
	}
	if out[7].OK || !strings.Contains(out[7].Error, "not_permitted") {
		t.Errorf("ungranted read: ok=%v %s", out[7].OK, out[7].Error)
	}
	for _, i := range []int{8, 9, 10, 11} {
		c.must(out[i], nil)
	}
}
