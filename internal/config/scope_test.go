package config

import (
	"slices"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// Globs of read_tools and write_tools that plainly meet are a warning, not
// an error: write wins for such a tool. Globs that may or may not meet are
// left to the broker, which warns when a real tool matches both.
func TestToolGlobOverlapWarns(t *testing.T) {
	src := `[mcp.gh]
cmd = "g"
read_tools = ["get_*", "list_repos", "search"]
write_tools = ["get_secret", "list_*", "search", "create_*"]
`
	cfg, err := Parse("/x/harness.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`harness.toml:4: mcp.gh.write_tools: "get_secret" and read_tools "get_*" both match "get_secret"; write wins`,
		`harness.toml:4: mcp.gh.write_tools: "list_*" and read_tools "list_repos" both match "list_repos"; write wins`,
		`harness.toml:4: mcp.gh.write_tools: "search" and read_tools "search" both match the same names ("search"); write wins`,
	}
	if !slices.Equal(cfg.Warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", cfg.Warnings, want)
	}

	// "get_*" and "*_repo" both match get_repo, but only a listing shows
	// whether such a tool exists.
	cfg, err = Parse("harness.toml", []byte("[mcp.gh]\ncmd='g'\nread_tools=['get_*']\nwrite_tools=['*_repo']\n"))
	if err != nil || len(cfg.Warnings) != 0 {
		t.Fatalf("globs that may meet: %q, %v", cfg.Warnings, err)
	}
}

func TestProjectGrantIsReadPlusItsOwnUpstreams(t *testing.T) {
	p, err := LoadProject(writeProject(t, "app", "[harness.web]\ncmd='x'\n[mcp.db]\ncmd='d'\n[mcp.cache]\ncmd='c'\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Grant()
	if !slices.Equal(g.Strings(), []string{"read", "cache:write", "db:write"}) {
		t.Fatalf("project grant %s", g)
	}
	for _, c := range []struct {
		ns   string
		cls  api.Class
		want bool
	}{
		{"db", api.Write, true}, {"db", api.Read, true}, {"gitea", api.Read, true},
		{"gitea", api.Write, false}, {api.FacadeNamespace, api.Write, false},
		{api.FacadeNamespace, api.Input, false}, {"db", api.Input, false},
	} {
		if g.Allows(c.ns, c.cls) != c.want {
			t.Errorf("project grant allows %s:%s = %v", c.ns, c.cls, !c.want)
		}
	}
	// The harnesses' own mcp_allow stays the default: project files
	// cannot write one.
	if h := p.Harnesses["web"]; !slices.Equal(h.MCPAllow.Strings(), []string{"read"}) {
		t.Errorf("project harness mcp_allow %s", h.MCPAllow)
	}
}
