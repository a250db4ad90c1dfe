package control

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// notDescribed are [harness.*] keys that describe does not show, each with
// why. A key the config decoder learns must be shown by describe (a field
// of UnitConfigView or of the list row) or be listed here.
var notDescribed = map[string]string{
	"timeout":    "a job control, shown by jobs/runs; not in describe's config yet",
	"on_overlap": "a job control, shown by jobs/runs; not in describe's config yet",
	"catch_up":   "a job control, shown by jobs/runs; not in describe's config yet",
	"keep_runs":  "a job control, shown by jobs/runs; not in describe's config yet",
	"mcp_tools":  "the tool listing mode of MCP sessions; not in describe's config yet",
	"mcp_wire":   "the switch of the agent's MCP wiring; not in describe's config yet",
	"prices":     "the price override; its effect is cost_usd on runs and turns; not in describe's config yet",
	"mcp_rate":   "a bound on its upstream calls; refusals show in `harness calls` and /metrics",

	// [mcp.KEY] keys (describe mcp.KEY).
	"call_timeout_s":    "an upstream's call bound; not in describe's config yet",
	"read_tools":        "an upstream's tool classes, shown per tool by `mcp status`",
	"write_tools":       "an upstream's tool classes, shown per tool by `mcp status`",
	"exclude_tools":     "an upstream's tool classes, shown per tool by `mcp status`",
	"exclude_prompts":   "an upstream's hidden prompts; not in describe's config yet",
	"exclude_resources": "an upstream's hidden resources; not in describe's config yet",
	"auth":              "a remote upstream's OAuth sign-in; not in describe's config yet",
	"client_id":         "a remote upstream's OAuth sign-in; not in describe's config yet",
	"scopes":            "a remote upstream's OAuth sign-in; not in describe's config yet",
}

// TestScenario_DescribeShowsEveryConfigKey reads the [harness.*] keys the
// config decoder knows (the case labels of its key switches) and holds
// describe to them: each is a JSON field of UnitConfigView or of the row
// describe embeds, or is excused above.
func TestScenario_DescribeShowsEveryConfigKey(t *testing.T) {
	keys := decoderKeys(t, map[string][]string{
		"units.go":     {"harness", "processKey", "upstream"},
		"jobs.go":      {"jobKey"},
		"resources.go": {"resourceKey"},
		"remote.go":    {"remoteKey"},
		"scope.go":     {"toolKey"},
	})
	for _, must := range []string{"cmd", "term_size", "idle_after", "tasks_max", "timeout", "url", "read_tools", "max_result_bytes"} {
		if !slices.Contains(keys, must) {
			t.Fatalf("the decoder's keys %v lack %q: the test reads the wrong switches", keys, must)
		}
	}
	shown := jsonFields(reflect.TypeFor[api.UnitConfigView]())
	shown = append(shown, jsonFields(reflect.TypeFor[api.Description]())...)
	for _, k := range keys {
		_, excused := notDescribed[k]
		switch in := slices.Contains(shown, k); {
		case !in && !excused:
			t.Errorf("config key %q is not shown by describe (add it to api.UnitConfigView, or a reason to notDescribed)", k)
		case in && excused:
			t.Errorf("config key %q is shown by describe now: drop it from notDescribed", k)
		}
	}
	f := newFixture(t, "[harness.tty]\ncmd = \"sleep\"\nargs = [\"1000\"]\nterm_size = \"100x30\"\nidle_after = 2.5\n")
	var d api.Description
	f.mustCall(api.OpDescribe, api.NameArg{Name: "tty"}, &d)
	if d.Config.TermSize != "100x30" || d.Config.IdleAfterS != 2.5 {
		t.Errorf("describe config %+v", d.Config)
	}
	raw, _ := json.Marshal(d.Config)
	if !strings.Contains(string(raw), `"term_size":"100x30"`) || !strings.Contains(string(raw), `"idle_after":2.5`) {
		t.Errorf("describe JSON %s", raw)
	}
}

// decoderKeys returns the string case labels of the outermost switch in
// each named function of internal/config.
func decoderKeys(t *testing.T, funcs map[string][]string) []string {
	t.Helper()
	var keys []string
	for file, names := range funcs {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "config", file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !slices.Contains(names, fd.Name.Name) {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok {
					return true
				}
				// switch k { case "key": } or switch { case k == "key": }
				id, ok := sw.Tag.(*ast.Ident)
				if sw.Tag != nil && (!ok || id.Name != "k") {
					return true
				}
				for _, st := range sw.Body.List {
					for _, e := range st.(*ast.CaseClause).List {
						if be, ok := e.(*ast.BinaryExpr); ok && sw.Tag == nil && be.Op == token.EQL {
							if x, ok := be.X.(*ast.Ident); ok && x.Name == "k" {
								e = be.Y
							}
						}
						if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							s, _ := strconv.Unquote(lit.Value)
							keys = append(keys, s)
						}
					}
				}
				return sw.Tag == nil // a tagless switch's cases may hold a keyed one
			})
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// jsonFields lists the JSON names of t's fields, embedded structs' too.
func jsonFields(t reflect.Type) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
