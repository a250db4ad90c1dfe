package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/harness-dev/harness/"

// rule forbids packages under from (a directory of the module, "/..."
// for its whole tree) to import any package under the forbidden prefixes.
type rule struct {
	from   string
	forbid []string
	why    string
}

var rules = []rule{
	{"internal/control", []string{"internal/mcp/", "internal/daemon", "internal/protocol", "internal/client"},
		"control is the engine's operations; doors (socket, MCP) call it, never the reverse"},
	{"internal/supervise", []string{"internal/control", "internal/daemon", "internal/mcp/", "internal/protocol"},
		"a unit's supervisor knows nothing of the fleet or the doors"},
	{"cmd/...", []string{"internal/control", "internal/supervise"},
		"the CLI speaks the wire (internal/api), never the engine"},
	{"internal/mcp/...", []string{"internal/control", "internal/supervise", "internal/daemon"},
		"MCP sessions reach operations through an interface and the wire types"},
	{"internal/client", []string{"internal/control", "internal/supervise", "internal/daemon", "internal/mcp/"},
		"the socket client is the CLI's and the bridge's; it carries bytes and wire types"},
}

// onlyRules allow packages under from to import, of the module, only the
// listed packages.
var onlyRules = []struct {
	from  string
	allow []string
	why   string
}{
	// The CLI parses, calls and renders: the wire (api, client, errcode)
	// for every verb. Besides, one binary is also the daemon (daemon) and
	// the demo upstream (mcp/demoupstream) and demo agent (demoagent); the viewers run in the CLI's
	// terminal (attachterm, tui/top); `harness bridge` and `service` run
	// there (bridge, service); and a few verbs read what only this machine
	// has: default paths (protocol.DefaultPaths), config.SameFile for
	// `harness ps`/snippets, the operator token file the daemon names
	// (mcp/httpmcp.ReadOperatorToken), dashboard tokens (dashtoken); the
	// binary is also the shim of a sandboxed spawn (sandbox.Exec). A new
	// import here says why in docs/design/architecture.md.
	{"cmd/...", []string{"internal/api", "internal/client", "internal/errcode",
		"internal/daemon", "internal/mcp/demoupstream", "internal/demoagent", "internal/attachterm", "internal/tui/top",
		"internal/bridge", "internal/service", "internal/protocol", "internal/config",
		"internal/mcp/httpmcp", "internal/dashtoken", "internal/sandbox"},
		"the CLI speaks the wire; the rest is listed with its reason above"},
	{"internal/tui/...", []string{"internal/api", "internal/client", "internal/errcode"},
		"the dashboard is a client of the socket: it speaks the wire, like the CLI"},
	{"internal/mask", []string{},
		"the masker is a leaf every package that renders text can use (docs/design/masking.md)"},
	{"internal/sandbox", []string{},
		"the shim runs before anything else of harness and execs the program (docs/design/sandbox.md)"},
	{"internal/egress", []string{},
		"the egress proxy shares nothing with the daemon's actors, so it never blocks them (docs/design/sandbox.md)"},
	{"internal/nowait", []string{},
		"reads and writes that never wait are a leaf under every stream the daemon serves"},
	// The paired devices (device) are credentials like dashboard tokens:
	// the pages redeem codes and check device cookies against the store.
	{"internal/web", []string{"internal/api", "internal/errcode", "internal/logkey", "internal/dashtoken", "internal/httpguard", "internal/device", "internal/actionlink"},
		"the web dashboard reaches operations through its Backend interface and the wire types, like the MCP sessions; it serves the action links the daemon's store holds"},
}

// TestImportRules checks every rule against the non-test files of the
// module, the packages that may import only a few, and that internal/api
// is a leaf (standard library only).
func TestImportRules(t *testing.T) {
	root := moduleRoot(t)
	imports := packageImports(t, root)
	if len(imports) < 10 {
		t.Fatalf("found only %d packages under %s: the walk is broken", len(imports), root)
	}
	for _, r := range rules {
		eachImport(t, imports, r.from, func(pkg, imp string) {
			for _, f := range r.forbid {
				if strings.HasPrefix(imp, f) {
					t.Errorf("%s imports %s: %s", pkg, imp, r.why)
				}
			}
		})
	}
	for _, r := range onlyRules {
		eachImport(t, imports, r.from, func(pkg, imp string) {
			if !slices.Contains(r.allow, imp) && !under(imp, r.from) {
				t.Errorf("%s imports %s: %s (allowed: %v)", pkg, imp, r.why, r.allow)
			}
		})
	}
	api, ok := imports["internal/api"]
	if !ok {
		t.Fatal("internal/api not found")
	}
	for _, imp := range api {
		t.Errorf("internal/api imports %s: it must stay a leaf (standard library only)", imp)
	}
}

// eachImport calls f with every module import of every package under
// from; a rule that matches no package is an error (a renamed directory
// must not silently retire its rule).
func eachImport(t *testing.T, imports map[string][]string, from string, f func(pkg, imp string)) {
	t.Helper()
	matched := 0
	for pkg, imps := range imports {
		if !under(pkg, from) {
			continue
		}
		matched++
		for _, imp := range imps {
			f(pkg, imp)
		}
	}
	if matched == 0 {
		t.Errorf("rule for %s matches no package", from)
	}
}

func under(pkg, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pkg == pattern
}

// packageImports maps each package directory (relative to the module
// root) to the module-internal packages its non-test files import, and
// records any non-standard import of internal/api as well.
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			var rec string
			switch {
			case strings.HasPrefix(imp, module):
				rec = strings.TrimPrefix(imp, module)
			case rel == "internal/api" && strings.Contains(strings.Split(imp, "/")[0], "."):
				rec = imp // a third-party import of the leaf
			default:
				continue
			}
			if !slices.Contains(out[rel], rec) {
				out[rel] = append(out[rel], rec)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot is the directory of go.mod above this test.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestLogKeysAreConstants: a slog call in the module's non-test files
// names its keys through internal/logkey, never with a string literal (a
// key spelled two ways splits what an operator greps for).
func TestLogKeysAreConstants(t *testing.T) {
	root := moduleRoot(t)
	levels := map[string]bool{"Debug": true, "Info": true, "Warn": true, "Error": true}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			first := -1
			switch {
			case levels[sel.Sel.Name] && len(call.Args) >= 3 && isMessage(call.Args[0]):
				first = 1
			case sel.Sel.Name == "With" && len(call.Args) >= 2 && len(call.Args)%2 == 0:
				first = 0
			default:
				return true
			}
			checked++
			for i := first; i < len(call.Args); i += 2 {
				if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: log key %s is a literal: use a logkey constant", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d log calls: the walk is broken", checked)
	}
}

// isMessage reports whether e looks like a log message: a string literal
// or a concatenation starting with one.
func isMessage(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.BinaryExpr:
		return isMessage(e.X)
	}
	return false
}
