package docstest

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
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/harness-dev/harness/internal/config"
)

// root is the repository, from this package's directory.
const root = "../.."

// projectMarker is the first line of a TOML block in the configuration
// reference that is a project's file, not the global one.
const projectMarker = "# A project's harness.toml"

// reference returns the TOML blocks of docs/configuration.md: the global
// ones joined into one file, and the project files one by one.
func reference(t *testing.T) (global string, projects []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, block := range fencedBlocks(string(data), "toml") {
		if strings.HasPrefix(block, projectMarker) {
			projects = append(projects, block)
			continue
		}
		b.WriteString(block)
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		t.Fatal("docs/configuration.md has no ```toml block")
	}
	return b.String(), projects
}

// fencedBlocks returns the bodies of the blocks fenced as ```lang.
func fencedBlocks(md, lang string) []string {
	var blocks []string
	var cur []string
	in, keep := false, false
	for line := range strings.SplitSeq(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			in, keep, cur = true, strings.TrimPrefix(trimmed, "```") == lang, nil
		case in && trimmed == "```":
			in = false
			if keep {
				blocks = append(blocks, strings.Join(cur, "\n"))
			}
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// loadProject loads data as a project's harness.toml with the daemon's
// loader.
func loadProject(t *testing.T, data string) (*config.Project, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return config.LoadProject(path)
}

// TestConfigurationReferenceLoads: every key the reference shows is one
// the parser accepts, with a value it accepts, because the reference's
// blocks load, together, without an error or a warning.
func TestConfigurationReferenceLoads(t *testing.T) {
	global, projects := reference(t)
	cfg, err := config.Parse("harness.toml", []byte(global))
	if err != nil {
		t.Fatalf("the TOML blocks of docs/configuration.md, joined, do not load:\n%v", err)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("docs/configuration.md loads with a warning: %s", w)
	}
	if len(projects) == 0 {
		t.Errorf("docs/configuration.md has no block starting %q", projectMarker)
	}
	for _, p := range projects {
		if _, err := loadProject(t, p); err != nil {
			t.Errorf("a project block of docs/configuration.md does not load:\n%v", err)
		}
	}
}

// A probe is one place a key can be written: the TOML around it, with KEY
// where the key goes, and the dotted key the parser names in its errors.
type probe struct {
	where   string // the place, as shownKeys names it
	file    string // TOML with KEY = 0 in the place
	key     string // the dotted key of KEY in errors
	project bool   // a project's file, not the global one
}

var probes = []probe{
	{"top", "[KEY]\n", "KEY", false},
	{"daemon", "[daemon]\nKEY = 0\n", "daemon.KEY", false},
	{"harness", "[harness.x]\ncmd = \"true\"\nKEY = 0\n", "harness.x.KEY", false},
	{"harness.worktree", "[harness.x]\ncmd = \"true\"\nworktree = { KEY = 0 }\n", "harness.x.worktree.KEY", false},
	{"harness.prices", "[harness.x]\ncmd = \"claude\"\nprices = { m = { KEY = 0 } }\n", "harness.x.prices.m.KEY", false},
	{"profile", "[profile.p]\nKEY = 0\n", "profile.p.KEY", false},
	{"mcp", "[mcp.x]\ncmd = \"true\"\nKEY = 0\n", "mcp.x.KEY", false},
	{"mcp.prompts", "[mcp.prompts]\nKEY = 0\n", "mcp.prompts.KEY", false},
	{"notify", "[notify.n]\nurl = \"https://example.com\"\nKEY = 0\n", "notify.n.KEY", false},
	{"webhook", "[webhook.w]\nKEY = 0\n", "webhook.w.KEY", false},
	{"web", "[web]\nKEY = 0\n", "web.KEY", false},
	{"project", "[project]\nKEY = 0\n", "project.KEY", true},
}

// accepts reports whether the parser takes key in p's place: loading the
// probe gives no "unknown key" or "unknown table" error for it. A key the
// probe already holds (cmd, url) is probed alone, as KEY = 0.
func (p probe) accepts(t *testing.T, key string) bool {
	t.Helper()
	var lines []string
	for line := range strings.SplitSeq(p.file, "\n") {
		if strings.HasPrefix(line, key+" = ") && !strings.Contains(line, "KEY") {
			continue
		}
		lines = append(lines, line)
	}
	file := strings.ReplaceAll(strings.Join(lines, "\n"), "KEY", key)
	var err error
	if p.project {
		_, err = loadProject(t, file)
	} else {
		_, err = config.Parse("harness.toml", []byte(file))
	}
	if err == nil {
		return true
	}
	var syntax toml.ParseError
	if errors.As(err, &syntax) {
		t.Fatalf("probe %q is not TOML: %v", file, err)
	}
	want := strings.ReplaceAll(p.key, "KEY", key)
	var list interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &list) {
		errs = list.Unwrap()
	}
	for _, e := range errs {
		var ce *config.Error
		if errors.As(e, &ce) && ce.Key == want && strings.HasPrefix(ce.Msg, "unknown ") {
			return false
		}
	}
	return true
}

// candidates are the names the parser could accept as keys: every string
// literal of the config package that is a bare lowercase TOML key. The
// parser decides which of them are keys, and where (probe.accepts).
func candidates(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(root, "internal", "config")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && bare.MatchString(s) {
				seen[s] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// shownKeys names each key the TOML in data sets by its place, as the
// probes do: "harness.cmd" for cmd in any [harness.NAME].
func shownKeys(t *testing.T, data string, project bool) map[string]bool {
	t.Helper()
	var v map[string]any
	md, err := toml.Decode(data, &v)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, k := range md.Keys() {
		if project {
			if len(k) == 2 && k[0] == "project" {
				shown["project."+k[1]] = true
			}
			continue
		}
		shown["top."+k[0]] = true
		switch {
		case (k[0] == "daemon" || k[0] == "web") && len(k) == 2:
			shown[k[0]+"."+k[1]] = true
		case k[0] == "harness" && len(k) == 3:
			shown["harness."+k[2]] = true
		case k[0] == "harness" && len(k) == 4 && k[2] == "worktree":
			shown["harness.worktree."+k[3]] = true
		case k[0] == "harness" && len(k) == 5 && k[2] == "prices":
			shown["harness.prices."+k[4]] = true
		case k[0] == "mcp" && len(k) == 3 && k[1] == "prompts":
			shown["mcp.prompts."+k[2]] = true
		case k[0] == "mcp" && len(k) == 3:
			shown["mcp."+k[2]] = true
		case (k[0] == "profile" || k[0] == "notify" || k[0] == "webhook") && len(k) == 3:
			shown[k[0]+"."+k[2]] = true
		}
	}
	return shown
}

// TestConfigurationReferenceShowsEveryKey: every key the parser accepts,
// in every table, is set in one of the reference's TOML blocks.
func TestConfigurationReferenceShowsEveryKey(t *testing.T) {
	global, projects := reference(t)
	shown := shownKeys(t, global, false)
	for _, p := range projects {
		for k := range shownKeys(t, p, true) {
			shown[k] = true
		}
	}
	names := candidates(t)
	for _, p := range probes {
		// The probe must tell a key from a name that is none.
		if p.accepts(t, "no_such_key_anywhere") {
			t.Fatalf("probe %s accepts a bogus key: it cannot tell keys apart", p.where)
		}
		n := 0
		for _, name := range names {
			if !p.accepts(t, name) {
				continue
			}
			n++
			if !shown[p.where+"."+name] {
				t.Errorf("docs/configuration.md does not show %s in %s: the parser accepts it there", name, place(p.where))
			}
		}
		if n == 0 {
			t.Errorf("probe %s found no key the parser accepts", p.where)
		}
	}
}

// place names a probe's table for a message.
func place(where string) string {
	switch where {
	case "top":
		return "the top level (a table)"
	case "harness.worktree":
		return "[harness.NAME] worktree = { … }"
	case "harness.prices":
		return "[harness.NAME] prices = { MODEL = { … } }"
	case "project":
		return "a project file's [project]"
	case "daemon", "mcp.prompts", "web":
		return "[" + where + "]"
	}
	return "[" + where + ".NAME]"
}

// TestReadmeConfigLoads: the configuration the README's tour has a
// newcomer write loads as it is.
func TestReadmeConfigLoads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(data), "toml")
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```toml block")
	}
	for _, b := range blocks {
		cfg, err := config.Parse("harness.toml", []byte(b))
		if err != nil {
			t.Errorf("a TOML block of README.md does not load:\n%v", err)
			continue
		}
		for _, w := range cfg.Warnings {
			t.Errorf("a TOML block of README.md loads with a warning: %s", w)
		}
	}
}
