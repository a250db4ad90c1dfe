package errcode

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// TestEveryCodeConstantHasASentinel: a Code constant without its define
// line would make Errorf(code) quietly carry internal.
func TestEveryCodeConstantHasASentinel(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("constant %s is not a literal", name.Name)
				}
				c, _ := strconv.Unquote(lit.Value)
				n++
				if SentinelFor(Code(c)).Code() != Code(c) {
					t.Errorf("code constant %s = %q has no sentinel (a define line)", name.Name, c)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("found no Code constants: the test reads the wrong file")
	}
	if got := Of(ErrBusy.Errorf("send %s", "x")); got != Busy {
		t.Errorf("Sentinel.Errorf carries %s", got)
	}
	if !errors.Is(ErrHeld.Errorf("hold"), ErrHeld) {
		t.Error("Sentinel.Errorf does not wrap its sentinel")
	}
}

// TestEveryCodeIsDocumented holds each defined code to the list of error
// codes of the user docs (docs/operations.md) and of the design notes
// (docs/design/wire.md), and each list to the codes: a code is documented
// where users and contributors look.
func TestEveryCodeIsDocumented(t *testing.T) {
	for _, doc := range []struct{ path, pattern string }{
		{"../../docs/operations.md", `Error codes are stable[^:]*:([^.]*)\.`},
		{"../../docs/design/wire.md", `Error codes, stable[^:]*:([^.]*)\.`},
	} {
		text, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		list := codeList(t, string(text), doc.pattern)
		for _, c := range Codes() {
			if !slices.Contains(list, c) {
				t.Errorf("code %q is not in %s's list of error codes", c, doc.path)
			}
		}
		for _, c := range list {
			if SentinelFor(c).Code() != c {
				t.Errorf("%s lists %q, which is not a code", doc.path, c)
			}
		}
	}
}

// codeList returns the `code` spans of the first match of pattern's group.
func codeList(t *testing.T, text, pattern string) []Code {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no list of error codes matching %s", pattern)
	}
	var out []Code
	for _, c := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[1], -1) {
		out = append(out, Code(c[1]))
	}
	return out
}
