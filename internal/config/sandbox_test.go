package config

import (
	"strings"
	"testing"
)

func TestScenario_SandboxKeysWithDefaultsAndOverrides(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse("harness.toml", []byte(`[defaults]
sandbox = { fs = "workdir", network = "allow", allow = ["api.example.com:443"] }

[harness.a]
cmd = "sh"
workdir = "`+dir+`"

[harness.b]
cmd = "sh"
sandbox = { network = "none", allow = [], rw = ["`+dir+`"], required = false }
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Harnesses["a"].Sandbox, cfg.Harnesses["b"].Sandbox
	if a.FS != "workdir" || a.Network != "allow" || len(a.Allow) != 1 || !a.Required || !a.AllowAgentAPI {
		t.Fatalf("a takes the defaults: %+v", a)
	}
	if b.FS != "workdir" || b.Network != "none" || b.Required || len(b.RW) != 1 {
		t.Fatalf("b overrides key by key: %+v", b)
	}
	plain, err := Parse("harness.toml", []byte("[harness.c]\ncmd = \"sh\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.Harnesses["c"].Sandbox; s.Active() || !s.Required {
		t.Fatalf("no sandbox key: %+v", s)
	}
}

func TestScenario_BadSandboxEntriesAreConfigErrorsWithTheirLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ toml, want string }{
		{`sandbox = { network = "allow", allow = ["example.com"] }`, `harness.toml:3: harness.x.sandbox.allow: invalid entry "example.com": want host:port`},
		{`sandbox = { network = "allow", allow = ["example.com:99999"] }`, `the port must be a number from 1 to 65535`},
		{`sandbox = { fs = "workdir", rw = ["relative/dir"] }`, `"relative/dir" is relative`},
		{`sandbox = { fs = "workdir", rw = ["` + dir + `/missing"] }`, `does not exist`},
		{`sandbox = { fs = "workdir", deny = ["` + dir + `"] }`, `overlaps the workdir`},
		{`sandbox = { fs = "workdir", deny = ["` + dir + `/sub"] }`, `overlaps the workdir`},
		{`sandbox = { fs = "everything" }`, `invalid fs "everything"`},
		{`sandbox = { network = "all" }`, `invalid network "all"`},
		{`sandbox = { allow = ["a.example:443"] }`, `has no effect unless network = "allow"`},
	} {
		_, err := Parse("harness.toml", []byte("[harness.x]\ncmd = \"sh\"\n"+c.toml+"\nworkdir = \""+dir+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "harness.toml:3:") {
			t.Errorf("%s: %v, want %q", c.toml, err, c.want)
		}
	}
}
