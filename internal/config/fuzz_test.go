package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// FuzzParse checks that Parse (and the project parser) never panic, that
// every error names the file and is config_invalid, that validation errors
// point at a line of the input, and that an accepted config keeps the
// invariants the rest of the daemon relies on.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		designExample,
		"",
		"[harness.a]\ncmd = 'x'\n",
		"[harness.j]\ncmd='x'\nschedule='*/5 * * * *'\nrestart='on-failure'\n",
		"[harness.j]\ncmd='x'\nschedule='@every 1h'\nenabled=true\n",
		"[mcp.broken]\nargs = []\n",
		"[mcp.harness]\ncmd='x'\n[mcp.prompts]\npaths=['~/p']\n",
		"[daemon]\nmcp_http='[::1]:1'\nmcp_http_operator_allow=['write']\n",
		"[profile.p]\nharnesses=['ghost']\nautostart=true\n",
		"[[harness]]\ncmd='x'\n",
		"harness.a.cmd = \"x\"\nharness.a.env = { A = '1', 'B.C' = \"2\" }\n",
		"[harness.a]\ncmd = \"\"\"\n[harness.b]\n\"\"\"\nrestart_delay = nan\n",
		"[project]\nname = 'p'\n[harness.a]\ncmd='x'\nworkdir='rel'\n",
		"[harness.a]\ncmd = 'x'\nargs = [\n",
		"a = 1979-05-27 07:32:00Z\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		t.Setenv("HOME", "/home/fuzz")
		cfg, err := Parse("/cfg/fuzz.toml", []byte(src))
		checkErr(t, src, err)
		if err == nil {
			checkConfig(t, cfg)
		}
		p, err := parseProject("/src/proj/fuzz.toml", []byte(src))
		checkErr(t, src, err)
		if err == nil {
			for name, h := range p.Harnesses {
				if h.Project != p.Name || h.Schedule != "" || !slices.Equal(h.MCPAllow.Strings(), []string{string(api.Read)}) || h.Workdir == "" {
					t.Errorf("project harness %q = %+v", name, h)
				}
			}
		}
	})
}

func checkErr(t *testing.T, src string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !errors.Is(err, errcode.ErrConfigInvalid) {
		t.Fatalf("error is not config_invalid: %v", err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "fuzz.toml:") {
			t.Fatalf("error line %q does not name the file", line)
		}
	}
	lines := strings.Count(src, "\n") + 1
	errs := []error{err}
	if _, single := err.(*Error); !single {
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			t.Fatalf("error %T is neither a *config.Error nor joined ones", err)
		}
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not a *config.Error", e)
		}
		if ce.err == nil && (ce.Line < 1 || ce.Line > lines) {
			t.Fatalf("validation error %q has line %d; input has %d lines", ce, ce.Line, lines)
		}
	}
}

func checkConfig(t *testing.T, cfg *Config) {
	t.Helper()
	if len(cfg.Order) != len(cfg.Harnesses) {
		t.Fatalf("Order %q does not list every harness", cfg.Order)
	}
	for _, name := range cfg.Order {
		h := cfg.Harnesses[name]
		if h == nil || h.Name != name || strings.TrimSpace(h.Cmd) == "" || !h.Restart.Valid() ||
			h.RestartDelay < 0 || h.StopGrace < 0 || !harnessNameRE.MatchString(name) {
			t.Fatalf("harness %q = %+v", name, h)
		}
		if h.Schedule != "" && (h.Enabled || h.Restart == RestartAlways || h.Restart == RestartUnlessStopped || !h.IsJob()) {
			t.Fatalf("scheduled harness %q breaks the job rules: %+v", name, h)
		}
	}
	for key, u := range cfg.Upstreams {
		if key == "prompts" || strings.HasPrefix(key, "harness") || !api.ValidNamespace(key) || strings.TrimSpace(u.Cmd) == "" {
			t.Fatalf("upstream %q = %+v", key, u)
		}
	}
	for name, p := range cfg.Profiles {
		for _, m := range p.Harnesses {
			if h, ok := cfg.Harnesses[m]; !ok || h.Schedule != "" {
				t.Fatalf("profile %q has bad member %q", name, m)
			}
		}
	}
	if cfg.Daemon.MCPHTTP != "" {
		if err := checkLoopback(cfg.Daemon.MCPHTTP); err != nil {
			t.Fatalf("mcp_http accepted: %v", err)
		}
	}
}
