package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
)

// writeProject writes src as harness.toml in a new directory named dir.
func writeProject(t *testing.T, dir, src string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), dir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "harness.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadProject(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	path := writeProject(t, "My Cool.Repo", `
[harness.web]
cmd = "npm"
args = ["run", "dev"]
workdir = "frontend"
env_file = ".env"

[harness.api]
cmd = "go"
workdir = "~/elsewhere"
env_file = "/etc/api.env"
restart = "on-failure"

[mcp.db]
cmd = "db-mcp"
env_file = "secrets/db.env"
`)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(path)
	if p.Name != "my-cool-repo" || p.Root != root || p.Path != path {
		t.Errorf("project = %q root %q path %q", p.Name, p.Root, p.Path)
	}
	if !slices.Equal(p.Order, []string{"web", "api"}) {
		t.Errorf("Order = %q", p.Order)
	}
	web := p.Harnesses["web"]
	if web.Project != "my-cool-repo" || web.Workdir != filepath.Join(root, "frontend") ||
		web.EnvFile != filepath.Join(root, ".env") || web.Restart != RestartAlways ||
		!slices.Equal(web.MCPAllow.Strings(), []string{"read"}) || web.IsJob() {
		t.Errorf("web = %+v", web)
	}
	api := p.Harnesses["api"]
	if api.Workdir != filepath.Join(home, "elsewhere") || api.EnvFile != "/etc/api.env" || !api.IsJob() {
		t.Errorf("api = %+v", api)
	}
	db := p.Upstreams["db"]
	if db == nil || db.Project != "my-cool-repo" || db.Workdir != root ||
		db.EnvFile != filepath.Join(root, "secrets/db.env") || db.RestartDelay != DefaultRestartDelay {
		t.Errorf("db = %+v", db)
	}
}

func TestLoadProjectNamed(t *testing.T) {
	path := writeProject(t, "whatever", "[project]\nname = \"shop\"\n[harness.a]\ncmd = 'x'\n")
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "shop" || p.Harnesses["a"].Project != "shop" || p.Harnesses["a"].Workdir != p.Root {
		t.Errorf("project = %+v, a = %+v", p, p.Harnesses["a"])
	}
}

func TestLoadProjectErrors(t *testing.T) {
	for _, tt := range []struct {
		name, dir, src string
		want           []string
	}{
		{"global-only tables", "app", "[daemon]\nwatch_config = true\n[profile.p]\nharnesses = []\n[mcp.prompts]\npaths = []\n", []string{
			"harness.toml:1: daemon: not allowed in a project file (global config only)",
			"harness.toml:3: profile: not allowed in a project file (global config only)",
			"harness.toml:5: mcp.prompts: not allowed in a project file (global config only)"}},
		{"global-only keys", "app", "[harness.a]\ncmd = 'x'\nmcp_allow = ['read', 'write']\nschedule = '@daily'\n", []string{
			"harness.toml:3: harness.a.mcp_allow: not allowed in a project file (global config only)",
			"harness.toml:4: harness.a.schedule: not allowed in a project file (global config only)"}},
		{"same unit rules", "app", "[harness.a]\nrestart = 'x'\n[mcp.harness-tools]\ncmd = 'x'\n[mcp.empty]\ncmd = ''\n", []string{
			"harness.toml:1: harness.a: cmd is required",
			`harness.toml:2: harness.a.restart: invalid restart policy "x" (want "always", "unless-stopped", "on-failure" or "no")`,
			`harness.toml:3: mcp.harness-tools: key "harness-tools" is reserved: it would shadow the facade's harness_* tools`,
			"harness.toml:6: mcp.empty: cmd is required (it is empty)"}},
		{"project table", "app", "[project]\nname = 'a/b'\nowner = 'me'\n", []string{
			`harness.toml:2: project.name: invalid project name "a/b": use letters, digits, "-" and "_"`,
			"harness.toml:3: project.owner: unknown key"}},
		{"unsanitisable dir", "...", "[harness.a]\ncmd = 'x'\n", []string{
			`harness.toml:1: project: cannot derive a project name from directory "..."; set [project] name`}},
		{"unknown table", "app", "[server]\nport = 1\n", []string{
			"harness.toml:1: server: unknown table"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadProject(writeProject(t, tt.dir, tt.src))
			if err == nil {
				t.Fatalf("no error; project %+v", p)
			}
			if !errors.Is(err, errcode.ErrConfigInvalid) {
				t.Errorf("%v is not config_invalid", err)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLoadProjectMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "harness.toml")
	_, err := LoadProject(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !errors.Is(err, errcode.ErrConfigInvalid) ||
		err.Error() != "harness.toml: no project file at "+path {
		t.Fatalf("err = %v", err)
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"app":          "app",
		"My Cool.Repo": "my-cool-repo",
		"--x--":        "x",
		"under_score":  "under_score",
		"Ünï":          "n",
		"...":          "",
		"a b  c":       "a-b--c",
	} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestScenario_AProjectsHarnessesTakeWorktreesOfItsRepository: worktree =
// true, or a table without repo, is a worktree of the project's directory;
// a relative repo resolves under it.
func TestScenario_AProjectsHarnessesTakeWorktreesOfItsRepository(t *testing.T) {
	path := writeProject(t, "app", `
[harness.a]
cmd = "x"
worktree = true

[harness.b]
cmd = "x"
worktree = { base = "main" }

[harness.c]
cmd = "x"
worktree = { repo = "sub" }
`)
	p, err := LoadProject(path)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(path)
	for name, want := range map[string]string{"a": root, "b": root, "c": filepath.Join(root, "sub")} {
		if w := p.Harnesses[name].Worktree; w == nil || w.Repo != want {
			t.Errorf("%s: worktree %+v, want repo %s", name, w, want)
		}
	}
}
