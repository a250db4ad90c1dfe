package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// designExample is a full example configuration, minus the schedule that would
// conflict with enabled = true and the profile.
const designExample = `[daemon]
watch_config = true
mcp_http = "127.0.0.1:7330"

[harness.reviewer]
cmd = "claude"
args = ["--model", "opus"]
workdir = "~/src/app"
env_file = "~/.config/harness/reviewer.env"
env = { FOO = "bar" }
description = "reviews PRs"
enabled = true
restart = "always"
restart_delay = 2
mcp_allow = ["read", "write"]

[harness.nightly]
cmd = "sh"
schedule = "@every 6h"

[harness.plain]
cmd = "top"

[profile.work]
harnesses = ["reviewer"]
autostart = true

[mcp.gitea]
cmd = "gitea-mcp"
args = ["--transport", "stdio"]
env_file = "~/.config/vault/gitea.env"
restart_delay = 1.5

[mcp.prompts]
paths = ["~/.config/harness/prompts", "/abs/prompts"]
`

func TestParseDesignExample(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg, err := Parse("/etc/x/harness.toml", []byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != "/etc/x/harness.toml" {
		t.Errorf("Path = %q", cfg.Path)
	}
	if !cfg.Daemon.WatchConfig || cfg.Daemon.MCPHTTP != "127.0.0.1:7330" || !slices.Equal(cfg.Daemon.MCPHTTPOperatorAllow.Strings(), []string{"read"}) {
		t.Errorf("Daemon = %+v", cfg.Daemon)
	}
	if want := []string{"reviewer", "nightly", "plain"}; !slices.Equal(cfg.Order, want) {
		t.Errorf("Order = %q, want %q", cfg.Order, want)
	}
	r := cfg.Harnesses["reviewer"]
	if r.Cmd != "claude" || !slices.Equal(r.Args, []string{"--model", "opus"}) ||
		r.Workdir != filepath.Join(home, "src/app") ||
		r.EnvFile != filepath.Join(home, ".config/harness/reviewer.env") ||
		r.Env["FOO"] != "bar" || r.Description != "reviews PRs" || !r.Enabled ||
		r.Restart != RestartAlways || r.RestartDelay != 2*time.Second ||
		r.StopGrace != DefaultStopGrace || !slices.Equal(r.MCPAllow.Strings(), []string{"read", "write"}) ||
		r.Project != "" || r.IsJob() {
		t.Errorf("reviewer = %+v", r)
	}
	n := cfg.Harnesses["nightly"]
	if n.Restart != RestartNo || n.Schedule != "@every 6h" || !n.IsJob() || n.Enabled {
		t.Errorf("nightly = %+v", n)
	}
	p := cfg.Harnesses["plain"]
	if p.Restart != RestartAlways || p.RestartDelay != time.Second || p.StopGrace != 10*time.Second ||
		p.Enabled || !slices.Equal(p.MCPAllow.Strings(), []string{"read"}) || p.IsJob() {
		t.Errorf("plain defaults = %+v", p)
	}
	if pr := cfg.Profiles["work"]; pr == nil || !pr.Autostart || !slices.Equal(pr.Harnesses, []string{"reviewer"}) || pr.Name != "work" {
		t.Errorf("profile = %+v", pr)
	}
	g := cfg.Upstreams["gitea"]
	if g == nil || g.Key != "gitea" || g.Cmd != "gitea-mcp" || g.RestartDelay != 1500*time.Millisecond ||
		g.StopGrace != DefaultStopGrace || g.EnvFile != filepath.Join(home, ".config/vault/gitea.env") {
		t.Errorf("gitea = %+v", g)
	}
	if _, ok := cfg.Upstreams["prompts"]; ok || len(cfg.Upstreams) != 1 {
		t.Errorf("upstreams = %v; prompts must not be one", cfg.Upstreams)
	}
	if want := []string{filepath.Join(home, ".config/harness/prompts"), "/abs/prompts"}; !slices.Equal(cfg.Prompts.Paths, want) {
		t.Errorf("prompts = %q, want %q", cfg.Prompts.Paths, want)
	}
}

func TestIsJob(t *testing.T) {
	for _, tt := range []struct {
		h    Harness
		want bool
	}{
		{Harness{Restart: RestartAlways}, false},
		{Harness{Restart: RestartUnlessStopped}, false},
		{Harness{Restart: RestartOnFailure}, true},
		{Harness{Restart: RestartNo}, true},
		{Harness{Restart: RestartNo, Schedule: "@daily"}, true},
	} {
		if got := tt.h.IsJob(); got != tt.want {
			t.Errorf("%+v IsJob = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestParseValid(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		check     func(*Config) bool
	}{
		{"empty file", "", func(c *Config) bool { return len(c.Harnesses) == 0 && len(c.Order) == 0 }},
		{"worktree table", "[harness.a]\ncmd='x'\nworktree={repo='/src/app', base='main'}", func(c *Config) bool {
			w := c.Harnesses["a"].Worktree
			return w != nil && *w == Worktree{Repo: "/src/app", Base: "main", Branch: DefaultWorktreeBranch} && w.BranchFor("a") == "harness/a"
		}},
		{"worktree true", "[harness.a]\ncmd='x'\nworkdir='/src/app'\nworktree=true\n[harness.b]\ncmd='x'\nworktree=false", func(c *Config) bool {
			w := c.Harnesses["a"].Worktree
			return w != nil && w.Repo == "/src/app" && c.Harnesses["b"].Worktree == nil
		}},
		{"default tasks_max", "[harness.a]\ncmd='x'\n[mcp.u]\ncmd='x'", func(c *Config) bool {
			return c.Harnesses["a"].Resources == Resources{TasksMax: DefaultTasksMax} && c.Upstreams["u"].Resources.TasksMax == DefaultTasksMax
		}},
		{"resources", "[harness.a]\ncmd='x'\ntasks_max=0\nmemory_max='2G'\nmemory_high=536870912\ncpu_weight=10000\n[mcp.u]\ncmd='x'\nmemory_max='1GiB'\ntasks_max=256", func(c *Config) bool {
			return c.Harnesses["a"].Resources == Resources{TasksMax: 0, MemoryMax: 2 << 30, MemoryHigh: 512 << 20, CPUWeight: 10000} &&
				c.Upstreams["u"].Resources == Resources{TasksMax: 256, MemoryMax: 1 << 30}
		}},
		{"schedule on-failure", "[harness.j]\ncmd='x'\nschedule='0 3 * * *'\nrestart='on-failure'",
			func(c *Config) bool { return c.Harnesses["j"].Restart == RestartOnFailure }},
		{"schedule restart no", "[harness.j]\ncmd='x'\nschedule='@hourly'\nrestart='no'",
			func(c *Config) bool { return c.Harnesses["j"].Restart == RestartNo }},
		{"descriptors", "[harness.a]\ncmd='x'\nschedule='@weekly'\n[harness.b]\ncmd='x'\nschedule='@monthly'\n[harness.c]\ncmd='x'\nschedule='@yearly'",
			func(c *Config) bool { return len(c.Harnesses) == 3 }},
		{"unless-stopped", "[harness.a]\ncmd='x'\nrestart='unless-stopped'",
			func(c *Config) bool { return c.Harnesses["a"].Restart == RestartUnlessStopped }},
		{"zero durations", "[harness.a]\ncmd='x'\nrestart_delay=0\nstop_grace=0.0",
			func(c *Config) bool { return c.Harnesses["a"].RestartDelay == 0 && c.Harnesses["a"].StopGrace == 0 }},
		{"default message bound", "", func(c *Config) bool { return c.Daemon.MCPMaxMessage == DefaultMCPMaxMessage }},
		{"message bound", "[daemon]\nmcp_max_message_bytes = 1048576", func(c *Config) bool { return c.Daemon.MCPMaxMessage == 1<<20 }},
		{"default result bound", "[mcp.u]\ncmd='x'", func(c *Config) bool { return c.Upstreams["u"].MaxResult == DefaultMaxResult }},
		{"result bound", "[mcp.u]\nurl='http://127.0.0.1:9/mcp'\nmax_result_bytes=1048576",
			func(c *Config) bool { return c.Upstreams["u"].MaxResult == 1<<20 }},
		{"call_timeout_s", "[mcp.u]\ncmd='x'\ncall_timeout_s=2.5",
			func(c *Config) bool { return c.Upstreams["u"].CallTimeout == 2500*time.Millisecond }},
		{"float stop_grace", "[harness.a]\ncmd='x'\nstop_grace=0.25",
			func(c *Config) bool { return c.Harnesses["a"].StopGrace == 250*time.Millisecond }},
		{"empty mcp_allow", "[harness.a]\ncmd='x'\nmcp_allow=[]",
			func(c *Config) bool { return c.Harnesses["a"].MCPAllow.Empty() }},
		{"namespaced mcp_allow", "[harness.a]\ncmd='x'\nmcp_allow=['read', 'gitea:write', 'harness:input', 'read']\n[mcp.gitea]\ncmd='g'",
			func(c *Config) bool {
				g := c.Harnesses["a"].MCPAllow
				return slices.Equal(g.Strings(), []string{"read", "gitea:write", "harness:input"}) &&
					g.Allows("gitea", "write") && !g.Allows("harness", "write") && g.Allows("harness", "input")
			}},
		{"upstream tool globs", "[mcp.gh]\ncmd='g'\nread_tools=['list_*', 'get_?']\nwrite_tools=['[a-c]*']\nexclude_tools=['delete_repo']",
			func(c *Config) bool {
				p := c.Upstreams["gh"].Tools
				return slices.Equal(p.ReadTools, []string{"list_*", "get_?"}) && slices.Equal(p.WriteTools, []string{"[a-c]*"}) &&
					slices.Equal(p.ExcludeTools, []string{"delete_repo"}) && len(c.Warnings) == 0
			}},
		{"harvest", "[harness.a]\ncmd='x'\nharvest_trajectory=true",
			func(c *Config) bool { return c.Harnesses["a"].HarvestTrajectory }},
		{"dotted keys", "harness.a.cmd = 'x'\nharness.b.cmd = 'y'",
			func(c *Config) bool { return slices.Equal(c.Order, []string{"a", "b"}) }},
		{"localhost", "[daemon]\nmcp_http='localhost:0'", func(c *Config) bool { return c.Daemon.MCPHTTP == "localhost:0" }},
		{"127/8", "[daemon]\nmcp_http='127.1.2.3:80'", func(c *Config) bool { return true }},
		{"ipv6 loopback", "[daemon]\nmcp_http='[::1]:7330'\nmcp_http_operator_allow=['read','write','write']",
			func(c *Config) bool {
				return slices.Equal(c.Daemon.MCPHTTPOperatorAllow.Strings(), []string{"read", "write"})
			}},
		{"operator allow namespaced", "[daemon]\nmcp_http_operator_allow=['read', 'harness:write', 'fs:write']\n[mcp.fs]\ncmd='x'",
			func(c *Config) bool {
				g := c.Daemon.MCPHTTPOperatorAllow
				return g.Allows("fs", "write") && g.Allows("harness", "write") && !g.Allows("other", "write")
			}},
		{"call_log_args", "[daemon]\ncall_log_args = true", func(c *Config) bool { return c.Daemon.CallLogArgs }},
		{"mcp_tools", "[daemon]\nmcp_http_operator_tools = 'search'\n[harness.a]\ncmd='x'\nmcp_tools='search'\n[harness.b]\ncmd='y'",
			func(c *Config) bool {
				return c.Daemon.MCPHTTPOperatorTools == api.ToolsSearch && c.Harnesses["a"].MCPTools == api.ToolsSearch && c.Harnesses["b"].MCPTools == api.ToolsAll
			}},
		{"call_log_args off by default", "[daemon]\nwatch_config = true", func(c *Config) bool { return !c.Daemon.CallLogArgs }},
		{"upstream key with digits", "[mcp.a-1]\ncmd='x'", func(c *Config) bool { return c.Upstreams["a-1"] != nil }},
		{"profile without members", "[profile.p]", func(c *Config) bool { return c.Profiles["p"] != nil }},
		{"terminal defaults", "[harness.a]\ncmd='x'", func(c *Config) bool {
			h := c.Harnesses["a"]
			return h.TermCols == 120 && h.TermRows == 40 && h.IdleAfter == 3*time.Second
		}},
		{"terminal keys", "[harness.a]\ncmd='x'\nterm_size='80x24'\nidle_after=1.5", func(c *Config) bool {
			h := c.Harnesses["a"]
			return h.TermCols == 80 && h.TermRows == 24 && h.IdleAfter == 1500*time.Millisecond
		}},
		{"agent inferred from cmd", "[harness.a]\ncmd='/usr/bin/claude'\n[harness.b]\ncmd='codex'\n[harness.c]\ncmd='gemini'\n[harness.d]\ncmd='sh'", func(c *Config) bool {
			h := c.Harnesses
			return h["a"].Agent == "claude-code" && h["b"].Agent == "codex" && h["c"].Agent == "gemini" &&
				h["d"].Agent == "generic" && h["a"].MCPWire && h["d"].MCPWire
		}},
		{"agent and mcp_wire set", "[harness.a]\ncmd='npx'\nagent='gemini'\nmcp_wire=false\n[harness.b]\ncmd='claude'\nagent='generic'", func(c *Config) bool {
			a, b := c.Harnesses["a"], c.Harnesses["b"]
			return a.Agent == "gemini" && !a.MCPWire && b.Agent == "generic" && b.MCPWire
		}},
		{"hooks off", "[harness.a]\ncmd='claude'\nhooks=false\n[harness.b]\ncmd='codex'", func(c *Config) bool {
			a, b := c.Harnesses["a"], c.Harnesses["b"]
			return !a.Hooks && a.MCPWire && b.Hooks
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("harness.toml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg) {
				t.Errorf("unexpected config: %+v", cfg)
			}
		})
	}
}

// TestParseErrors pins the exact text of each error: file, line, key and
// message. Every case lists all of its errors in order.
func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"bad worktrees", "[harness.a]\ncmd='x'\nworktree=true\n[harness.b]\ncmd='x'\nworkdir='/w'\nworktree={repo='/r', branch='-x', size=1}\n[harness.c]\ncmd='x'\nworktree='yes'\n[harness.d]\ncmd='x'\nworktree={repo='/r', base='--orphan=x'}\n", []string{
			`harness.toml:3: harness.a.worktree: worktree = true needs workdir: the repository to take a worktree of`,
			`harness.toml:6: harness.b.workdir: cannot be combined with worktree = { … }: the worktree is the workdir`,
			`harness.toml:7: harness.b.worktree.branch: invalid branch "-x": a git branch name (no spaces, "..", "~^:?*[\\", not starting with "-"); {name} is the harness's name`,
			`harness.toml:7: harness.b.worktree.size: unknown key`,
			`harness.toml:10: harness.c.worktree: must be true or a table { repo, base, branch }, not a string`,
			`harness.toml:13: harness.d.worktree.base: invalid base "--orphan=x": a commit or branch, not starting with "-"`}},
		{"bad resources", "[harness.a]\ncmd='x'\ntasks_max=-1\nmemory_max='lots'\ncpu_weight=0\n[mcp.u]\ncmd='x'\nmemory_max='1M'\nmemory_high='2M'\n", []string{
			`harness.toml:3: harness.a.tasks_max: must be a whole number >= 0 (0 = no limit), not -1`,
			`harness.toml:4: harness.a.memory_max: invalid size "lots": use bytes, or digits with K, M, G or T ("512M", "2G")`,
			`harness.toml:5: harness.a.cpu_weight: must be a whole number from 1 to 10000, not 0`,
			`harness.toml:9: mcp.u.memory_high: 2097152 bytes is above memory_max (1048576 bytes): it would never throttle`}},
		// A port out of range and a call timeout of 0 were accepted.
		{"url port out of range", "[mcp.a]\nurl = 'http://127.0.0.1:99999/mcp'\n[mcp.b]\nurl = 'http://127.0.0.1:0/mcp'\n", []string{
			"harness.toml:2: mcp.a.url: port 99999 is not in 1..65535",
			"harness.toml:4: mcp.b.url: port 0 is not in 1..65535"}},
		{"call timeout zero", "[mcp.a]\ncmd = 'x'\ncall_timeout_s = 0\n[mcp.b]\ncmd = 'x'\ncall_timeout_s = 0.0\n", []string{
			"harness.toml:3: mcp.a.call_timeout_s: must be > 0 seconds (leave it out for the default)",
			"harness.toml:6: mcp.b.call_timeout_s: must be > 0 seconds (leave it out for the default)"}},
		{"missing upstream cmd", "[mcp.ok]\ncmd = 'x'\n\n[mcp.broken]\nargs = []\n",
			[]string{"harness.toml:4: mcp.broken: cmd or url is required"}},
		{"empty harness cmd", "[harness.a]\ndescription = 'd'\ncmd = ' '\n",
			[]string{"harness.toml:3: harness.a: cmd is required (it is empty)"}},
		{"missing harness cmd", "\n[harness.a]\n",
			[]string{"harness.toml:2: harness.a: cmd is required"}},
		{"unknown table", "[harness.a]\ncmd='x'\n[frobnicate]\nx=1\n",
			[]string{"harness.toml:3: frobnicate: unknown table"}},
		{"unknown top-level key", "name = 'x'\n",
			[]string{"harness.toml:1: name: unknown key"}},
		{"unknown harness key", "[harness.a]\ncmd='x'\nrestrat='no'\n",
			[]string{"harness.toml:3: harness.a.restrat: unknown key"}},
		{"unknown daemon key", "[daemon]\nwatch = true\n",
			[]string{"harness.toml:2: daemon.watch: unknown key"}},
		{"unknown subtable", "[harness.a]\ncmd='x'\n[harness.a.extra]\n",
			[]string{"harness.toml:3: harness.a.extra: unknown table"}},
		{"prompts keys", "[mcp.prompts]\ncmd = 'x'\npaths = 'p'\n", []string{
			"harness.toml:2: mcp.prompts.cmd: unknown key",
			"harness.toml:3: mcp.prompts.paths: must be an array of strings, not a string"}},
		{"bad restart", "[harness.reviewer]\ncmd='x'\nrestart = 'sometimes'\n",
			[]string{`harness.toml:3: harness.reviewer.restart: invalid restart policy "sometimes" (want "always", "unless-stopped", "on-failure" or "no")`}},
		{"bad harness name", "[harness.\"a/b\"]\ncmd='x'\n",
			[]string{`harness.toml:1: harness."a/b": invalid harness name "a/b": use letters, digits, "-" and "_" ("/" is reserved for project/name)`}},
		{"bad upstream key", "[mcp.Gitea]\ncmd='x'\n[mcp.a_b]\ncmd='x'\n", []string{
			`harness.toml:1: mcp.Gitea: invalid upstream key "Gitea": use lowercase letters, digits and "-"`,
			`harness.toml:3: mcp.a_b: invalid upstream key "a_b": use lowercase letters, digits and "-"`}},
		{"reserved upstream keys", "[mcp.harness]\ncmd='x'\n[mcp.harness-x]\ncmd='x'\n", []string{
			`harness.toml:1: mcp.harness: key "harness" is reserved: it would shadow the facade's harness_* tools`,
			`harness.toml:3: mcp.harness-x: key "harness-x" is reserved: it would shadow the facade's harness_* tools`}},
		{"bad schedule", "[harness.j]\ncmd='x'\nschedule = '61 * * * *'\n",
			[]string{`harness.toml:3: harness.j.schedule: invalid schedule "61 * * * *": end of range (61) above maximum (59): 61`}},
		{"schedule every zero", "[harness.j]\ncmd='x'\nschedule = '@every 0s'\n",
			[]string{`harness.toml:3: harness.j.schedule: invalid schedule "@every 0s": @every needs at least 1s`}},
		{"schedule blank", "[harness.j]\ncmd='x'\nschedule = ''\n",
			[]string{`harness.toml:3: harness.j.schedule: must not be empty (omit it for no schedule)`}},
		{"schedule and enabled", "[harness.j]\ncmd='x'\nenabled = true\nschedule = '@daily'\n",
			[]string{"harness.toml:4: harness.j.schedule: cannot be combined with enabled = true"}},
		{"schedule and always", "[harness.j]\ncmd='x'\nschedule = '@daily'\nrestart = 'always'\n",
			[]string{`harness.toml:3: harness.j.schedule: cannot be combined with restart = "always"`}},
		{"schedule and unless-stopped", "[harness.j]\ncmd='x'\nschedule = '@daily'\nrestart = 'unless-stopped'\n",
			[]string{`harness.toml:3: harness.j.schedule: cannot be combined with restart = "unless-stopped"`}},
		{"schedule in profile", "[harness.j]\ncmd='x'\nschedule='@daily'\n[profile.p]\nharnesses = ['j']\n",
			[]string{`harness.toml:5: profile.p.harnesses: harness "j" has a schedule, which cannot be combined with profile membership`}},
		{"unknown profile member", "[harness.a]\ncmd='x'\n[profile.p]\nautostart = true\nharnesses = ['a', 'ghost', 'a']\n", []string{
			`harness.toml:5: profile.p.harnesses: unknown harness "ghost"`,
			`harness.toml:5: profile.p.harnesses: harness "a" is listed twice`}},
		{"profile keys", "[profile.p]\nautostart = 'yes'\nmembers = []\n", []string{
			"harness.toml:2: profile.p.autostart: must be true or false, not a string",
			"harness.toml:3: profile.p.members: unknown key"}},
		{"non-loopback http", "[daemon]\nmcp_http = '0.0.0.0:7330'\n",
			[]string{`harness.toml:2: daemon.mcp_http: host "0.0.0.0" is not loopback (want 127.0.0.0/8, ::1 or localhost)`}},
		{"empty host http", "[daemon]\nmcp_http = ':7330'\n",
			[]string{`harness.toml:2: daemon.mcp_http: host "" is not loopback (want 127.0.0.0/8, ::1 or localhost)`}},
		{"named host http", "[daemon]\nmcp_http = 'example.com:80'\n",
			[]string{`harness.toml:2: daemon.mcp_http: host "example.com" is not loopback (want 127.0.0.0/8, ::1 or localhost)`}},
		{"no port http", "[daemon]\nmcp_http = '127.0.0.1'\n",
			[]string{`harness.toml:2: daemon.mcp_http: want a loopback host:port such as 127.0.0.1:7330: address 127.0.0.1: missing port in address`}},
		{"newline in a value stays on one line", "[daemon]\nmcp_http = \"x\\ny\"\n",
			[]string{`harness.toml:2: daemon.mcp_http: want a loopback host:port such as 127.0.0.1:7330: address x\ny: missing port in address`}},
		{"bad port http", "[daemon]\nmcp_http = '127.0.0.1:99999'\n",
			[]string{`harness.toml:2: daemon.mcp_http: invalid port "99999" in "127.0.0.1:99999"`}},
		{"operator allow", "[daemon]\nmcp_http_operator_allow = ['admin', 'gh:write']\n", []string{
			`harness.toml:2: daemon.mcp_http_operator_allow: "admin": unknown class "admin" (want "read", "write" or "input")`,
			`harness.toml:2: daemon.mcp_http_operator_allow: "gh:write": unknown namespace "gh" (want "harness" or the key of an [mcp.KEY] upstream in this file; it declares none)`}},
		{"mcp_tools", "[harness.a]\ncmd = 'x'\nmcp_tools = 'some'\n",
			[]string{`harness.toml:3: harness.a.mcp_tools: invalid tool mode "some" (want "all" or "search")`}},
		{"call_log_args", "[daemon]\ncall_log_args = 'yes'\n",
			[]string{"harness.toml:2: daemon.call_log_args: must be true or false, not a string"}},
		{"mcp_allow", "[harness.a]\ncmd='x'\nmcp_allow = ['read', 'exec']\n",
			[]string{`harness.toml:3: harness.a.mcp_allow: "exec": unknown class "exec" (want "read", "write" or "input")`}},
		{"mcp_allow bad grants", "[mcp.github]\ncmd='g'\n[mcp.fs]\ncmd='f'\n\n[harness.a]\ncmd='x'\nmcp_allow = ['github:wrte']\n[harness.b]\ncmd='x'\nmcp_allow = ['read', 'nosuch:read', 'Bad:read']\n", []string{
			`harness.toml:8: harness.a.mcp_allow: "github:wrte": unknown class "wrte" (want "read", "write" or "input")`,
			`harness.toml:11: harness.b.mcp_allow: "Bad:read": invalid namespace "Bad" (want "harness" or an upstream key: lowercase letters, digits and "-")`,
			`harness.toml:11: harness.b.mcp_allow: "nosuch:read": unknown namespace "nosuch" (want "harness" or the key of an [mcp.KEY] upstream in this file: fs, github)`}},
		{"bad tool globs", "[mcp.gh]\ncmd='g'\nread_tools = ['[a-']\nwrite_tools = ['']\nexclude_tools = 'x'\n", []string{
			`harness.toml:3: mcp.gh.read_tools: invalid glob "[a-": syntax error in pattern`,
			`harness.toml:4: mcp.gh.write_tools: empty glob`,
			`harness.toml:5: mcp.gh.exclude_tools: must be an array of strings, not a string`}},
		{"durations", "[harness.a]\ncmd='x'\nrestart_delay = -1\nstop_grace = 'soon'\n[mcp.u]\ncmd='x'\nrestart_delay = -0.5\nstop_grace = 1e300\n", []string{
			"harness.toml:3: harness.a.restart_delay: must be >= 0 seconds, not -1",
			"harness.toml:4: harness.a.stop_grace: must be a number of seconds, not a string",
			"harness.toml:7: mcp.u.restart_delay: must be >= 0 seconds, not -0.5",
			"harness.toml:8: mcp.u.stop_grace: 1e+300 seconds is too long"}},
		{"message bound", "[daemon]\nmcp_max_message_bytes = 1024\n", []string{
			"harness.toml:2: daemon.mcp_max_message_bytes: 1024 bytes is out of range (want 65536..67108864)"}},
		{"result bound", "[mcp.u]\ncmd='x'\nmax_result_bytes = 10\n[mcp.v]\ncmd='x'\nmax_result_bytes = 2.5\n", []string{
			"harness.toml:3: mcp.u.max_result_bytes: 10 bytes is out of range (want 65536..1073741824)",
			"harness.toml:6: mcp.v.max_result_bytes: must be a number of bytes, not a float"}},
		{"message bound type", "[daemon]\nmcp_max_message_bytes = '4M'\n", []string{
			"harness.toml:2: daemon.mcp_max_message_bytes: must be a number of bytes, not a string"}},
		{"call timeout", "[mcp.u]\ncmd='x'\ncall_timeout_s = -2\n[mcp.v]\ncmd='x'\ncall_timeout_s = 'long'\n[harness.a]\ncmd='x'\ncall_timeout_s = 3\n", []string{
			"harness.toml:3: mcp.u.call_timeout_s: must be >= 0 seconds, not -2",
			"harness.toml:6: mcp.v.call_timeout_s: must be a number of seconds, not a string",
			"harness.toml:9: harness.a.call_timeout_s: unknown key"}},
		{"terminal keys", "[harness.a]\ncmd='x'\nterm_size='120 x 40'\nidle_after=0\n[harness.b]\ncmd='x'\nterm_size='1x40'\nidle_after='3s'\n[harness.c]\ncmd='x'\nterm_size=12040\n", []string{
			`harness.toml:3: harness.a.term_size: invalid terminal size "120 x 40" (want "COLSxROWS", e.g. "120x40")`,
			"harness.toml:4: harness.a.idle_after: must be > 0 seconds, not 0",
			`harness.toml:7: harness.b.term_size: terminal size "1x40" out of range (want 2..1000 columns and 2..500 rows)`,
			"harness.toml:8: harness.b.idle_after: must be a number of seconds, not a string",
			"harness.toml:11: harness.c.term_size: must be a string, not an integer"}},
		{"agent keys", "[harness.a]\ncmd='x'\nagent='cursor'\nmcp_wire='no'\n[harness.b]\ncmd='x'\nagent=1\nhooks=0\n", []string{
			`harness.toml:3: harness.a.agent: unknown agent "cursor" (want one of "claude-code", "cline", "codex", "copilot", "demo", "gemini", "generic", "opencode", "pi", "qwen-code")`,
			"harness.toml:4: harness.a.mcp_wire: must be true or false, not a string",
			"harness.toml:7: harness.b.agent: must be a string, not an integer",
			"harness.toml:8: harness.b.hooks: must be true or false, not an integer"}},
		{"nan and huge int", "[harness.a]\ncmd='x'\nrestart_delay = nan\nstop_grace = 9223372037\n", []string{
			"harness.toml:3: harness.a.restart_delay: must be >= 0 seconds, not NaN",
			"harness.toml:4: harness.a.stop_grace: 9223372037 seconds is too long"}},
		{"types", "[harness.a]\ncmd = 1\nargs = 'x'\nenv = { OK = 'y', N = 2 }\nenabled = 'yes'\n", []string{
			"harness.toml:2: harness.a.cmd: must be a string, not an integer",
			"harness.toml:3: harness.a.args: must be an array of strings, not a string",
			"harness.toml:4: harness.a.env.N: must be a string, not an integer",
			"harness.toml:5: harness.a.enabled: must be true or false, not a string"}},
		{"env on its own lines", "[harness.a]\ncmd = 'x'\n[harness.a.env]\nOK = 'y'\nBAD = true\n",
			[]string{"harness.toml:5: harness.a.env.BAD: must be a string, not a boolean"}},
		{"args element", "[mcp.u]\ncmd = 'x'\nargs = ['a', 2]\n",
			[]string{"harness.toml:3: mcp.u.args: element 1 must be a string, not an integer"}},
		{"array of tables", "[[harness]]\ncmd = 'x'\n",
			[]string{"harness.toml:1: harness: must be a table, not an array of tables"}},
		{"harness not a table", "[harness]\na = 1\n",
			[]string{"harness.toml:2: harness.a: must be a table, not an integer"}},
		{"mcp not a table", "mcp = 'x'\n",
			[]string{"harness.toml:1: mcp: must be a table, not a string"}},
		{"project table is global-unknown", "[project]\nname = 'x'\n",
			[]string{"harness.toml:1: project: unknown table"}},
		{"errors in line order across tables", "[profile.p]\nharnesses = ['ghost']\n[harness.b]\nrestart = 'x'\n[daemon]\nbogus = 1\n[harness.a]\ncmd = 'x'\n", []string{
			`harness.toml:2: profile.p.harnesses: unknown harness "ghost"`,
			`harness.toml:3: harness.b: cmd is required`,
			`harness.toml:4: harness.b.restart: invalid restart policy "x" (want "always", "unless-stopped", "on-failure" or "no")`,
			`harness.toml:6: daemon.bogus: unknown key`}},
		{"syntax error keeps the parser line", "[harness.a]\ncmd = 'x'\nargs = [\n",
			[]string{"harness.toml:3: harness.a.args: unexpected EOF; expected value"}},
		{"duplicate key", "[harness.a]\ncmd = 'x'\n\ncmd = 'y'\n",
			[]string{"harness.toml:4: harness.a.cmd: Key 'harness.a.cmd' has already been defined."}},
		{"unclosed header names its own line and key", "[harness.a]\ncmd = 'x'\n\n[harness.x\ncmd = 'y'\n",
			[]string{`harness.toml:4: harness.x: expected '.' or ']' to end table name, but got '\n' instead`}},
		{"unclosed header after a key", "[harness.a]\ncmd = 'x'\n[mcp.gitea\n",
			[]string{`harness.toml:3: mcp.gitea: expected '.' or ']' to end table name, but got '\n' instead`}},
		{"unclosed header at the end", "[harness.a]\ncmd = 'x'\n[harness.x",
			[]string{`harness.toml:3: harness.x: expected '.' or ']' to end table name, but got '\x00' instead`}},
		{"unclosed array-of-tables header", "[harness.a]\ncmd = 'x'\n  [[harness.x\n",
			[]string{`harness.toml:3: harness.x: expected '.' or ']' to end table name, but got '\n' instead`}},
		{"unclosed quoted header", "[harness.a]\ncmd='x'\n[harness.\"x\n",
			[]string{`harness.toml:3: harness.x: strings cannot contain newlines`}},
		{"unclosed header after a byte-order mark", "\xef\xbb\xbf[harness.a]\ncmd='x'\n[harness.x\n",
			[]string{`harness.toml:3: harness.x: expected '.' or ']' to end table name, but got '\n' instead`}},
		{"syntax error without key", "\x00",
			[]string{"harness.toml:1: files cannot contain NULL bytes; probably using UTF-16; TOML files must be UTF-8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("/some/dir/harness.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Error("a config came back with an error")
			}
			if !errors.Is(err, errcode.ErrConfigInvalid) || errcode.Of(err) != errcode.ConfigInvalid {
				t.Errorf("error %v is not config_invalid", err)
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestTildeWithoutHome(t *testing.T) {
	t.Setenv("HOME", "")
	_, err := Parse("harness.toml", []byte("[harness.a]\ncmd='x'\nworkdir='~/w'\nenv_file='/abs'\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "harness.toml:3: harness.a.workdir: cannot expand ~:") {
		t.Fatalf("err = %v", err)
	}
	// "~user" and a "~" inside a path are left alone.
	cfg, err := Parse("harness.toml", []byte("[harness.a]\ncmd='x'\nworkdir='~bob/w'\nenv_file='a/~/b'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Harnesses["a"]; h.Workdir != "~bob/w" || h.EnvFile != "a/~/b" {
		t.Errorf("harness = %+v", h)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "harness.toml")
	cfg, err := Load(missing)
	if err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if cfg.Path != missing || cfg.Harnesses == nil || cfg.Upstreams == nil || cfg.Profiles == nil || len(cfg.Order) != 0 {
		t.Errorf("empty config = %+v", cfg)
	}

	path := filepath.Join(dir, "fleet.toml")
	if err := os.WriteFile(path, []byte("[harness.a]\ncmd = 'x'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(path)
	if err != nil || cfg.Harnesses["a"] == nil || cfg.Path != path {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}

	if err := os.WriteFile(path, []byte("[harness.a]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || err.Error() != "fleet.toml:1: harness.a: cmd is required" {
		t.Errorf("bad file: %v", err)
	}

	// A directory cannot be read as a file: an error, not an empty config.
	_, err = Load(dir)
	if err == nil || !errors.Is(err, errcode.ErrConfigInvalid) || !strings.HasPrefix(err.Error(), filepath.Base(dir)+": ") {
		t.Errorf("reading a directory: %v", err)
	}
}
