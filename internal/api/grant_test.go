package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{
		"read":           {Class: Read},
		"write":          {Class: Write},
		"input":          {Class: Input},
		"harness:read":   {Namespace: FacadeNamespace, Class: Read},
		"github:write":   {Namespace: "github", Class: Write},
		"my-srv-2:input": {Namespace: "my-srv-2", Class: Input},
	} {
		got, err := ParseScope(in)
		if err != nil || got != want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%+v renders as %q, want %q", got, got.String(), in)
		}
	}
	for in, wantMsg := range map[string]string{
		"wrte":           `"wrte": unknown class "wrte" (want "read", "write" or "input")`,
		"github:wrte":    `"github:wrte": unknown class "wrte"`,
		"":               `unknown class ""`,
		":read":          `invalid namespace ""`,
		"GitHub:read":    `invalid namespace "GitHub"`,
		"a:b:read":       `unknown class "b:read"`,
		"github__x:read": `invalid namespace "github__x"`,
		"read:github":    `unknown class "github"`,
	} {
		_, err := ParseScope(in)
		if err == nil || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("ParseScope(%q) error %v, want it to contain %s", in, err, wantMsg)
		}
	}
}

func TestGrantAllows(t *testing.T) {
	g, err := ParseGrant([]string{"read", "everything:write", "harness:input", "read"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns   string
		cls  Class
		want bool
	}{
		{"everything", Read, true},
		{"filesystem", Read, true},
		{FacadeNamespace, Read, true},
		{"everything", Write, true},
		{"filesystem", Write, false},
		{FacadeNamespace, Write, false},
		{FacadeNamespace, Input, true},
		{"everything", Input, false},
		{"everything", "", false},
	} {
		if got := g.Allows(c.ns, c.cls); got != c.want {
			t.Errorf("%s.Allows(%s, %s) = %v", g, c.ns, c.cls, got)
		}
	}
	if got := g.Strings(); !slices.Equal(got, []string{"read", "everything:write", "harness:input"}) {
		t.Errorf("duplicates kept or order lost: %v", got)
	}
	if got := g.String(); got != `["read", "everything:write", "harness:input"]` {
		t.Errorf("String() = %s", got)
	}
	if got := g.Namespaces(); !slices.Equal(got, []string{"everything", "harness"}) {
		t.Errorf("Namespaces() = %v", got)
	}
	want := map[string][]Class{
		"harness":    {Read, Input},
		"everything": {Read, Write},
		"filesystem": {Read},
	}
	if got := g.PerNamespace([]string{"harness", "filesystem"}); !reflect.DeepEqual(got, want) {
		t.Errorf("PerNamespace = %v, want %v", got, want)
	}
}

func TestGrantZeroAndDefault(t *testing.T) {
	var none Grant
	if !none.Empty() || none.Allows(FacadeNamespace, Read) || none.Strings() == nil {
		t.Fatalf("zero grant: empty=%v strings=%#v", none.Empty(), none.Strings())
	}
	if got := none.PerNamespace([]string{"harness"}); got["harness"] == nil || len(got["harness"]) != 0 {
		t.Fatalf("zero grant per namespace: %#v (want an empty list, not null)", got)
	}
	d := DefaultGrant()
	if !d.Allows("anything", Read) || d.Allows(FacadeNamespace, Write) || d.Allows(FacadeNamespace, Input) {
		t.Fatalf("default grant %s", d)
	}
}

func TestParseGrantReportsEveryBadEntry(t *testing.T) {
	_, err := ParseGrant([]string{"read", "wrte", "x:inptu"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"wrte"`, `"x:inptu"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), `"read":`) {
		t.Errorf("error names a good entry: %q", err)
	}
}
