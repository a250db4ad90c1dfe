package facade

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_EveryToolSchemaMatchesItsArguments: each facade tool's
// schema has exactly its op's argument fields as properties, less the ones
// hidden with a reason, so a tool cannot silently drop (or invent) an
// argument control takes.
func TestScenario_EveryToolSchemaMatchesItsArguments(t *testing.T) {
	for _, sp := range api.Specs() {
		if sp.Tool == nil {
			continue
		}
		tool, ok := Lookup(sp.Tool.Name)
		if !ok {
			t.Errorf("spec of %s has a tool, the registry does not", sp.Op)
			continue
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if err := checkProperties(sp.Args, sp.Op, &s); err != nil {
			t.Errorf("%s: %v", tool.Name, err)
		}
		if tool.Class != sp.Class || tool.Op != sp.Op || tool.Description != sp.Tool.Description {
			t.Errorf("%s: registry %+v differs from spec %+v", tool.Name, tool, sp)
		}
	}
}

type goodArgs struct {
	Name  string  `json:"name" jsonschema:"a name" mcp:"required,minLength=1"`
	Limit float64 `json:"limit" mcp:"exclusiveMinimum=0,maximum=10"`
	Mode  string  `json:"mode" mcp:"enum=a|b,default=a"`
	Keys  []int   `json:"keys"`
	Inner string  `json:"inner" mcp:"-: only the CLI sets it"`
}

type silentlyHidden struct {
	Name  string `json:"name"`
	Inner string `json:"inner" mcp:"-"`
}

type sharedArgs struct {
	Name  string `json:"name" mcp:"required"`
	Fresh bool   `json:"fresh" jsonschema:"restart's alone" mcp:"only=restart"`
}

type onlyNowhere struct {
	Name string `json:"name" mcp:"only=restat"`
}

type badOption struct {
	Name string `json:"name" mcp:"minimun=1"`
}

// TestScenario_AnArgumentOmittedFromTheSchemaFails shows the check and the
// derivation refuse each way an argument and its schema can part: a field
// with no property, a property with no field, a field hidden with no
// reason, a misspelt bound.
func TestScenario_AnArgumentOmittedFromTheSchemaFails(t *testing.T) {
	raw, err := inputSchema(reflect.TypeFor[goodArgs](), "list")
	if err != nil {
		t.Fatalf("good arguments: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if err := checkProperties(reflect.TypeFor[goodArgs](), "list", &s); err != nil {
		t.Fatalf("derived schema fails its own check: %v", err)
	}
	if _, ok := s.Properties["inner"]; ok || len(s.Required) != 1 || s.Properties["keys"].Type != "array" || *s.Properties["limit"].ExclusiveMinimum != 0 {
		t.Fatalf("derived schema %s", raw)
	}

	missing := s.CloneSchemas()
	delete(missing.Properties, "limit")
	if err := checkProperties(reflect.TypeFor[goodArgs](), "list", missing); err == nil || !strings.Contains(err.Error(), `"limit"`) {
		t.Errorf("a field without a property: %v", err)
	}
	extra := s.CloneSchemas()
	extra.Properties["timeout_s"] = &jsonschema.Schema{Type: "integer"}
	if err := checkProperties(reflect.TypeFor[goodArgs](), "list", extra); err == nil || !strings.Contains(err.Error(), "timeout_s") {
		t.Errorf("a property without a field: %v", err)
	}
	shown := s.CloneSchemas()
	shown.Properties["inner"] = &jsonschema.Schema{Type: "string"}
	if err := checkProperties(reflect.TypeFor[goodArgs](), "list", shown); err == nil {
		t.Error("a hidden field with a property passed")
	}
	if _, err := inputSchema(reflect.TypeFor[silentlyHidden](), "list"); err == nil || !strings.Contains(err.Error(), "without a reason") {
		t.Errorf("a field hidden without a reason: %v", err)
	}
	if _, err := inputSchema(reflect.TypeFor[badOption](), "list"); err == nil || !strings.Contains(err.Error(), "unknown option") {
		t.Errorf("a misspelt bound: %v", err)
	}
}

// TestScenario_AnArgumentOfOneOpIsOnlyOnThatOpsTool: a field of an argument
// type several ops share that one op alone reads (only=OP) is a property of
// that op's tool and left out of the others', so a model is not offered an
// argument that does nothing; only= must name an op.
func TestScenario_AnArgumentOfOneOpIsOnlyOnThatOpsTool(t *testing.T) {
	props := func(op string) map[string]*jsonschema.Schema {
		t.Helper()
		raw, err := inputSchema(reflect.TypeFor[sharedArgs](), op)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s.Properties
	}
	if p := props("restart"); p["fresh"] == nil || p["fresh"].Description != "restart's alone" {
		t.Errorf("restart's tool lacks fresh: %v", p)
	}
	if p := props("start"); p["fresh"] != nil || p["name"] == nil {
		t.Errorf("start's tool: %v, want name without fresh", p)
	}
	if _, err := inputSchema(reflect.TypeFor[onlyNowhere](), "start"); err == nil || !strings.Contains(err.Error(), "names no op") {
		t.Errorf("only= naming no op: %v", err)
	}
	// The real table: fresh is restart's.
	for name, want := range map[string]bool{"harness_restart": true, "harness_start": false, "harness_stop": false} {
		tool, _ := Lookup(name)
		var s jsonschema.Schema
		if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		if _, has := s.Properties["fresh"]; has != want {
			t.Errorf("%s lists fresh: %v, want %v", name, has, want)
		}
	}
}
