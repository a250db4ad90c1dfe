package errcode

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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

// notInDesignYet are codes defined this wave that DESIGN §8's list (the
// reference, not ours to edit) does not name yet, each with why.
var notInDesignYet = map[Code]string{
	Busy: "added by issue 36 (send's bounded queue); DESIGN §8 is to list it",
}

// TestEveryCodeIsDocumented holds each defined code to README's list of
// error codes and to DESIGN §8's (found in the workspace above the
// repository).
func TestEveryCodeIsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readmeList := codeList(t, string(readme), `Error codes \(stable[^)]*\):([^.]*)\.`)
	for _, c := range Codes() {
		if !slices.Contains(readmeList, c) {
			t.Errorf("code %q is not in README's list of error codes", c)
		}
	}
	design := findDesign()
	if design == "" {
		t.Log("DESIGN.md not found above the repository: its list is not checked here")
		return
	}
	raw, err := os.ReadFile(design)
	if err != nil {
		t.Fatal(err)
	}
	designList := codeList(t, string(raw), `Error codes, stable[^:]*:([^.]*)\.`)
	for _, c := range Codes() {
		_, excused := notInDesignYet[c]
		if in := slices.Contains(designList, c); !in && !excused {
			t.Errorf("code %q is not in DESIGN §8's list (%s)", c, design)
		} else if in && excused {
			t.Errorf("code %q is in DESIGN now: drop it from notInDesignYet", c)
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

// findDesign looks for shared/DESIGN.md in the directories above this one
// (the workspace keeps it beside the checkouts).
func findDesign() string {
	dir, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "shared", "DESIGN.md")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
