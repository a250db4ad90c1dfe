package facade

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegistryMatchesDesign(t *testing.T) {
	want := map[string]api.Class{
		"harness_list": api.Read, "harness_describe": api.Read, "harness_logs": api.Read, "harness_runs": api.Read,
		"harness_jobs": api.Read, "harness_triggers": api.Read, "harness_daemon_info": api.Read,
		"harness_list_trajectories": api.Read, "harness_get_trajectory": api.Read, "harness_screen": api.Read,
		"harness_start": api.Write, "harness_stop": api.Write, "harness_restart": api.Write, "harness_trigger": api.Write,
		"harness_delegate": api.Write,
		"harness_send":     api.Input, "harness_answer": api.Input, "harness_diff": api.Read,
		"harness_new": api.Write, "harness_rm": api.Write, "harness_agents": api.Read,
		"harness_land": api.Write,
	}
	tools := Tools()
	if len(tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(tools), len(want))
	}
	for _, tool := range tools {
		class, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Class != class {
			t.Errorf("%s: class %q, want %q", tool.Name, tool.Class, class)
		}
		if tool.Op != strings.TrimPrefix(tool.Name, Prefix+"_") {
			t.Errorf("%s: op %q", tool.Name, tool.Op)
		}
		// The op table of internal/control answers exactly api.Ops (its own
		// test holds it to that), so a tool whose op is listed there has a
		// handler.
		if !slices.Contains(api.Ops(), tool.Op) {
			t.Errorf("%s: op %q is not a control operation (api.Ops)", tool.Name, tool.Op)
		}
		if !Reserved(tool.Name) {
			t.Errorf("%s outside the reserved namespace", tool.Name)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatalf("%s: schema: %v", tool.Name, err)
		}
		if schema["type"] != "object" {
			t.Errorf("%s: schema root type %v", tool.Name, schema["type"])
		}
		got, ok := Lookup(tool.Name)
		if !ok || got.Name != tool.Name {
			t.Errorf("Lookup(%q) = %v, %v", tool.Name, got, ok)
		}
	}
	arrays := map[string]bool{"harness_list": true, "harness_runs": true, "harness_jobs": true, "harness_triggers": true, "harness_list_trajectories": true, "harness_agents": true}
	for _, tool := range tools {
		if arrays[tool.Name] != (tool.ResultKey != "") {
			t.Errorf("%s: ResultKey %q", tool.Name, tool.ResultKey)
		}
	}
	if _, ok := Lookup("harness_nope"); ok {
		t.Error("Lookup found a tool that does not exist")
	}
	if Reserved("gitea__search") {
		t.Error("upstream name reported as reserved")
	}
}

func TestSchemasRequireNameWhereTheOpNeedsOne(t *testing.T) {
	needsName := []string{"harness_describe", "harness_logs", "harness_start", "harness_stop", "harness_restart", "harness_trigger", "harness_list_trajectories", "harness_get_trajectory", "harness_send", "harness_screen", "harness_answer", "harness_delegate", "harness_diff", "harness_new", "harness_rm", "harness_land"}
	for _, tool := range Tools() {
		var schema struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if got, want := slices.Contains(schema.Required, "name"), slices.Contains(needsName, tool.Name); got != want {
			t.Errorf("%s: name required = %v, want %v", tool.Name, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		tool, args string
		ok         bool
	}{
		{"harness_list", ``, true},
		{"harness_list", `null`, true},
		{"harness_list", `{}`, true},
		{"harness_list", `{"bogus":1}`, false},
		{"harness_describe", `{}`, false},
		{"harness_describe", `{"name":""}`, false},
		{"harness_describe", `{"name":"web"}`, true},
		{"harness_logs", `{"name":"web","format":"summary","cursor":12,"lines":5}`, true},
		{"harness_logs", `{"name":"web","format":"raw","offset":0,"max_bytes":1024}`, true},
		{"harness_logs", `{"name":"web","format":"html"}`, false},
		{"harness_logs", `{"name":"web","cursor":-1}`, false},
		{"harness_logs", `{"name":"web","offset":1.5}`, false},
		{"harness_logs", `{"name":"web","max_bytes":0}`, false},
		{"harness_runs", `{}`, true},
		{"harness_runs", `{"name":"web","limit":3}`, true},
		{"harness_runs", `{"limit":0}`, false},
		{"harness_list_trajectories", `{"name":"job"}`, true},
		{"harness_list_trajectories", `{}`, false},
		{"harness_get_trajectory", `{"name":"job","run":3,"cursor":10,"max_bytes":4096}`, true},
		{"harness_get_trajectory", `{"name":"job"}`, false},
		{"harness_get_trajectory", `{"name":"job","run":0}`, false},
		{"harness_get_trajectory", `{"name":"job","run":3,"lines":5}`, false},
		{"harness_screen", `{"name":"agent"}`, true},
		{"harness_screen", `{"name":"agent","scrollback":100,"idle_s":2.5,"timeout_s":30}`, true},
		{"harness_screen", `{}`, false},
		{"harness_screen", `{"name":"agent","scrollback":-1}`, false},
		{"harness_screen", `{"name":"agent","scrollback":1001}`, false},
		{"harness_screen", `{"name":"agent","idle_s":-1}`, false},
		{"harness_screen", `{"name":"agent","timeout_s":1e10}`, false},
		{"harness_screen", `{"name":"agent","ansi":true}`, true},
		{"harness_screen", `{"name":"agent","ansi":"yes"}`, false},
		{"harness_list", `{"project":"shop"}`, true},
		{"harness_list", `{"project_path":"/tmp/shop/harness.toml"}`, false},
		{"harness_trigger", `{"name":"nightly","wait":true,"timeout_s":0.5}`, true},
		{"harness_trigger", `{"name":"nightly","timeout_s":86401}`, false},
		{"harness_stop", `{"name":"web","all":true}`, false},
		{"harness_send", `{"name":"agent","keys":null}`, false},
		{"harness_trigger", `{"name":"nightly","wait":true,"timeout_s":30}`, true},
		{"harness_trigger", `{"name":"nightly","wait":"yes"}`, false},
		{"harness_trigger", `{"name":"nightly","timeout_s":0}`, false},
		{"harness_stop", `{"name":"web"}`, true},
		{"harness_stop", `[1,2]`, false},
		{"harness_stop", `{not json`, false},
	}
	for _, c := range cases {
		tool, ok := Lookup(c.tool)
		if !ok {
			t.Fatalf("no tool %s", c.tool)
		}
		err := tool.Validate(json.RawMessage(c.args))
		if c.ok && err != nil {
			t.Errorf("%s %s: unexpected error %v", c.tool, c.args, err)
		}
		if !c.ok {
			if err == nil {
				t.Errorf("%s %s: accepted", c.tool, c.args)
			} else if !errors.Is(err, errcode.ErrInvalidArgument) {
				t.Errorf("%s %s: code %s, want invalid_argument (%v)", c.tool, c.args, errcode.Of(err), err)
			}
		}
	}
}

func TestToolsReturnsCopies(t *testing.T) {
	tools := Tools()
	tools[0].InputSchema[0] = 'X'
	tools[0].Name = "changed"
	again, ok := Lookup("harness_list")
	if !ok || again.InputSchema[0] != '{' {
		t.Fatalf("registry was modified through Tools(): %q", again.InputSchema)
	}
}
