//go:build interop

package interop

import (
	"encoding/json"
	"slices"
	"testing"
)

// screenConfig: a harness that draws a small menu with cursor moves, and
// one that never starts.
const screenConfig = `
[harness.menu]
cmd = "sh"
args = ["-c", "printf '\\033[2GPick\\033[8Gone:\\r\\n\\033[3G> 1. Yes\\r\\n\\033[5G2. No\\r\\n'; exec sleep 100000"]
idle_after = 0.5
enabled = true
stop_grace = 2

[harness.idle]
cmd = "sleep"
args = ["100000"]
`

// screenShape is the part of a screen answer both doors must agree on.
type screenShape struct {
	Name   string `json:"name"`
	RunID  uint64 `json:"run_id"`
	Cols   int    `json:"cols"`
	Rows   int    `json:"rows"`
	Cursor struct {
		Row     int  `json:"row"`
		Col     int  `json:"col"`
		Visible bool `json:"visible"`
	} `json:"cursor"`
	AltScreen  bool     `json:"alt_screen"`
	Activity   string   `json:"activity"`
	Lines      []string `json:"lines"`
	Scrollback []string `json:"scrollback"`
	Note       string   `json:"note"`
}

// The TypeScript SDK client's harness_screen, with idle_s, returns
// the rows `harness screen --json` prints; a harness that is not running
// is an isError result with code not_running, and a bad argument
// invalid_argument.
func TestTS_HarnessScreenMatchesTheCLI(t *testing.T) {
	f := newFleet(t, screenConfig)
	f.waitRunning("menu")

	c, steps := runTS(t,
		connectStep("h", f.bridge()),
		opStep("h", "callTool", "name", "harness_screen", "args", map[string]any{"name": "menu", "idle_s": 1, "timeout_s": 30, "scrollback": 10}),
		opStep("h", "callTool", "name", "harness_screen", "args", map[string]any{"name": "idle"}),
		opStep("h", "callTool", "name", "harness_screen", "args", map[string]any{"name": "menu", "scrollback": -1}),
	)
	var res toolResult
	c.must(steps[1], &res)
	if res.IsError {
		t.Fatalf("harness_screen: %s\n%s", res.text(), c.transcript())
	}
	var viaMCP screenShape
	if err := json.Unmarshal(res.StructuredContent, &viaMCP); err != nil {
		t.Fatalf("harness_screen structuredContent %s: %v", res.StructuredContent, err)
	}
	want := []string{" Pick  one:", "  > 1. Yes", "    2. No", ""}
	if viaMCP.Activity != "idle" || viaMCP.Note != "" || len(viaMCP.Lines) != 40 || !slices.Equal(viaMCP.Lines[:4], want) {
		t.Fatalf("harness_screen after idle: %+v, want rows %q", viaMCP, want)
	}
	var viaCLI screenShape
	f.MustJSON(&viaCLI, "screen", "menu", "--scrollback", "10")
	if !slices.Equal(viaMCP.Lines, viaCLI.Lines) || !slices.Equal(viaMCP.Scrollback, viaCLI.Scrollback) ||
		viaMCP.Cursor != viaCLI.Cursor || viaMCP.RunID != viaCLI.RunID || viaMCP.Cols != viaCLI.Cols || viaMCP.Rows != viaCLI.Rows {
		t.Fatalf("harness_screen %+v\nharness screen --json %+v", viaMCP, viaCLI)
	}

	for i, code := range map[int]string{2: "not_running", 3: "invalid_argument"} {
		var r toolResult
		c.must(steps[i], &r)
		var body struct {
			Code string `json:"code"`
		}
		if !r.IsError || json.Unmarshal(r.StructuredContent, &body) != nil || body.Code != code {
			t.Errorf("step %d: isError=%v %s, want code %s", i, r.IsError, r.StructuredContent, code)
		}
	}
}
