//go:build interop

package interop

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

var readTools = []string{"harness_agents", "harness_daemon_info", "harness_describe", "harness_diff", "harness_get_trajectory", "harness_jobs", "harness_list", "harness_list_trajectories", "harness_logs", "harness_runs", "harness_screen", "harness_triggers"}

const facadeConfig = `
[harness.sleeper]
cmd = "sh"
args = ["-c", "exec sleep 100000"]
description = "sleeps"
enabled = true
stop_grace = 2

[harness.idle]
cmd = "sleep"
args = ["100000"]
description = "never started"
`

type unitRow struct {
	Name  string `json:"name"`
	State string `json:"state"`
	PID   int    `json:"pid"`
}

func (f *fleet) units() []unitRow {
	f.T.Helper()
	var us []unitRow
	f.MustJSON(&us, "list")
	return us
}

func (f *fleet) waitRunning(name string) unitRow {
	f.T.Helper()
	var got unitRow
	f.WaitFor(name+" to be running", 20*time.Second, func() bool {
		for _, u := range f.units() {
			if u.Name == name && u.State == "running" && u.PID > 0 {
				got = u
				return true
			}
		}
		return false
	})
	return got
}

// The TypeScript SDK client runs `harness mcp` (unattributed, no
// --allow-control), negotiates 2025-11-25, sees exactly the read facade
// tools, gets harness_list matching `harness list --json`, is refused
// harness_stop as an isError result with code not_permitted (and nothing
// stops), and the same session still answers harness_describe afterwards.
func TestTS_FacadeThroughBridge(t *testing.T) {
	f := newFleet(t, facadeConfig)
	before := f.waitRunning("sleeper")

	c, steps := runTS(t,
		connectStep("h", f.bridge()),
		opStep("h", "listTools"),
		opStep("h", "callTool", "name", "harness_list"),
		opStep("h", "callTool", "name", "harness_stop", "args", map[string]any{"name": "sleeper"}),
		opStep("h", "callTool", "name", "harness_describe", "args", map[string]any{"name": "sleeper"}),
	)

	var info struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	c.must(steps[0], &info)
	if info.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated protocol %q, want 2025-11-25 (%s)", info.ProtocolVersion, steps[0].Result)
	}
	if _, ok := info.Capabilities["tools"]; !ok {
		t.Errorf("server capabilities lack tools: %s", steps[0].Result)
	}

	var listed struct{ Tools []tool }
	c.must(steps[1], &listed)
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
		if !json.Valid(tl.InputSchema) || len(tl.InputSchema) == 0 {
			t.Errorf("tool %s has no input schema", tl.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, readTools) {
		t.Fatalf("unattributed session without --allow-control lists %v, want exactly %v", names, readTools)
	}

	var list toolResult
	c.must(steps[2], &list)
	if list.IsError {
		t.Fatalf("harness_list: isError: %s\n%s", list.text(), c.transcript())
	}
	var viaMCP struct {
		Harnesses []unitRow `json:"harnesses"`
	}
	if err := json.Unmarshal(list.StructuredContent, &viaMCP); err != nil {
		t.Fatalf("harness_list structuredContent %s: %v", list.StructuredContent, err)
	}
	viaCLI := f.units()
	if len(viaMCP.Harnesses) != len(viaCLI) {
		t.Fatalf("harness_list %+v, harness list --json %+v", viaMCP.Harnesses, viaCLI)
	}
	for i := range viaCLI {
		if m, cl := viaMCP.Harnesses[i], viaCLI[i]; m.Name != cl.Name || m.State != cl.State || m.PID != cl.PID {
			t.Errorf("row %d: harness_list %+v, harness list --json %+v", i, m, cl)
		}
	}

	var stop toolResult
	c.must(steps[3], &stop) // a refusal is a result, not a protocol error
	var refusal struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if !stop.IsError || json.Unmarshal(stop.StructuredContent, &refusal) != nil || refusal.Code != "not_permitted" {
		t.Fatalf("harness_stop on a read-only session: isError=%v structuredContent=%s, want isError with code not_permitted\n%s",
			stop.IsError, stop.StructuredContent, c.transcript())
	}
	if refusal.Message == "" {
		t.Errorf("refusal has no message: %s", stop.StructuredContent)
	}
	for _, u := range f.units() {
		if u.Name == "sleeper" && (u.State != "running" || u.PID != before.PID) {
			t.Fatalf("a refused harness_stop changed sleeper: %+v -> %+v", before, u)
		}
	}

	var describe toolResult
	c.must(steps[4], &describe)
	if describe.IsError {
		t.Fatalf("harness_describe after the refusal: %s\n%s", describe.text(), c.transcript())
	}
	var d unitRow
	if err := json.Unmarshal(describe.StructuredContent, &d); err != nil || d.Name != "sleeper" || d.State != "running" || d.PID != before.PID {
		t.Fatalf("harness_describe sleeper: structuredContent %s (%v), want sleeper running as pid %d", describe.StructuredContent, err, before.PID)
	}
}
