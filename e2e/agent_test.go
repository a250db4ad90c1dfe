//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestScenario_AGenericChildKeepsItsListRow: a Go test child has no
// adapter. Its list --json row is the row it always had plus `agent`
// ("generic") and, while it runs, `agent_state` from busy/idle; nothing
// else changes, in the same key order.
func TestScenario_AGenericChildKeepsItsListRow(t *testing.T) {
	f := newFleet(t, childHarness("child", "tui", "idle_after = 0.3")+"\n[harness.claude]\ncmd = \"/nonexistent/claude\"\nrestart = \"no\"\n")
	row := func(name string) (map[string]json.RawMessage, []string) {
		t.Helper()
		out := f.MustRun("list", "--json")
		var rows []json.RawMessage
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(r, &m); err != nil {
				t.Fatal(err)
			}
			if string(m["name"]) == `"`+name+`"` {
				return m, keyOrder(t, r)
			}
		}
		t.Fatalf("no row %s in %s", name, out)
		return nil, nil
	}
	before := []string{"name", "state", "enabled", "pid", "restart_count", "last_exit_code", "description"}

	m, keys := row("child")
	if want := append(slices.Clone(before), "agent"); !slices.Equal(keys, want) {
		t.Errorf("stopped generic row keys = %v, want %v", keys, want)
	}
	if string(m["agent"]) != `"generic"` {
		t.Errorf("agent = %s, want generic", m["agent"])
	}
	if m, _ := row("claude"); string(m["agent"]) != `"claude-code"` {
		t.Errorf("a harness running claude: agent = %s, want claude-code", m["agent"])
	}

	f.MustRun("start", "child")
	f.waitState("child", "running")
	f.MustRun("wait", "child", "--idle", "300ms", "--timeout", "60s")
	m, keys = row("child")
	want := append(slices.Clone(before), "activity", "idle_s", "idle_since", "agent", "agent_state")
	if string(m["activity"]) != `"idle"` {
		want = slices.DeleteFunc(want, func(k string) bool { return k == "idle_since" }) // only while idle
	}
	if !slices.Equal(keys, want) {
		t.Errorf("running generic row keys = %v, want %v", keys, want)
	}
	if string(m["activity"]) == `"idle"` && string(m["agent_state"]) != `"ready"` {
		t.Errorf("idle generic harness: agent_state = %s, want ready", m["agent_state"])
	}
}

// keyOrder returns the keys of the JSON object raw in the order written.
func keyOrder(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
