package interop

import (
	"encoding/json"
	"fmt"
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
