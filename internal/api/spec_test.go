package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestScenario_EveryOpHasAClassAndAWellFormedSpec holds the spec table:
// every op has a known class, object arguments, a result, and a facade
// tool (when it has one) named, described and wrapped correctly.
func TestScenario_EveryOpHasAClassAndAWellFormedSpec(t *testing.T) {
	for _, err := range checkSpecs(specs) {
		t.Error(err)
	}
	for _, op := range Ops() {
		c, ok := ClassOf(op)
		if !ok || !slices.Contains(Classes(), c) {
			t.Errorf("ClassOf(%q) = %q, %v", op, c, ok)
		}
	}
}

// TestScenario_ASpecWithoutAClassFails shows checkSpecs refuses each
// omission: no class, a misnamed or undescribed tool, an array result
// without a ResultKey.
func TestScenario_ASpecWithoutAClassFails(t *testing.T) {
	bad := []Spec{
		spec[NameArg, OK]("frob", ""),
		spec[NameArg, OK]("frob", "admin"),
		spec[NameArg, []Run]("frob", Read).tool("", "has an array result"),
		spec[NameArg, OK]("frob", Read).tool("", ""),
		spec[NameArg, OK]("frob", Read).tool("x", "object result with a key"),
		spec[string, OK]("frob", Read),
	}
	wantIn := []string{"class", "class", "ResultKey", "no description", "ResultKey", "not a struct"}
	for i, s := range bad {
		errs := checkSpecs([]Spec{s})
		if len(errs) == 0 {
			t.Errorf("spec %d (%+v) passed", i, s)
			continue
		}
		if !strings.Contains(errs[0].Error(), wantIn[i]) {
			t.Errorf("spec %d: %v, want it to mention %s", i, errs[0], wantIn[i])
		}
	}
	misnamed := spec[NameArg, OK]("frob", Read).tool("", "d")
	misnamed.Tool.Name = "harness_frobnicate"
	if errs := checkSpecs([]Spec{misnamed}); len(errs) == 0 {
		t.Error("a misnamed tool passed")
	}
}

// TestClassOf covers the lookup a bridge or a dashboard checks grants
// with: ops, the doors, and what no grant allows.
func TestClassOf(t *testing.T) {
	cases := map[string]Class{
		OpList: Read, OpStop: Write, OpSend: Input, OpScreen: Read, OpShutdown: Write,
		OpReload: Write, OpCalls: Read, OpSubscribe: Read, OpAttach: Input, OpRun: Input,
	}
	for op, want := range cases {
		if got, ok := ClassOf(op); !ok || got != want {
			t.Errorf("ClassOf(%q) = %q, %v; want %q", op, got, ok, want)
		}
	}
	if _, ok := ClassOf("frobnicate"); ok {
		t.Error("an unknown op has a class")
	}
	if AttachClass(true) != Read || AttachClass(false) != Input {
		t.Error("AttachClass")
	}
	s, ok := SpecOf(OpLogs)
	if !ok || s.Args != reflect.TypeFor[LogsArgs]() || s.Tool == nil {
		t.Fatalf("SpecOf(logs) = %+v, %v", s, ok)
	}
	s.Tool.Name = "changed"
	if again, _ := SpecOf(OpLogs); again.Tool.Name != "harness_logs" {
		t.Error("SpecOf returned the table's own tool")
	}
}
