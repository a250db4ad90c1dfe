package config

import (
	"strings"
	"testing"
)

// TestScenario_TailnetKeyComesFromTheEnvironmentAndLoginsHaveGrants: the
// auth key is a ${VAR}, never a literal; a hostname is a DNS label; each
// [web.users] login has a grant that parses; a good table loads with its
// defaults.
func TestScenario_TailnetKeyComesFromTheEnvironmentAndLoginsHaveGrants(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"literal key", "[web]\ntailnet = { auth_key = 'tskey-auth-abc' }\n", `harness.toml:2: web.tailnet.auth_key: must come from a variable`},
		{"bad hostname", "[web]\ntailnet = { hostname = 'my box' }\n", `web.tailnet.hostname: want a DNS label`},
		{"bad control", "[web]\ntailnet = { control_url = 'ftp://x' }\n", `web.tailnet.control_url: want an http(s)://`},
		{"unknown key", "[web]\ntailnet = { port = 80 }\n", `web.tailnet.port: unknown key`},
		{"bad grant", "[web.users]\n'ann@example.com' = 'read,fly'\n", `web.users."ann@example.com": "fly": unknown class`},
		{"empty grant", "[web.users]\n'ann@example.com' = ' , '\n", `want a grant such as "read,input"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("harness.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(tt.src, "tskey") && strings.Contains(err.Error(), "tskey-auth-abc") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
	cfg, err := Parse("harness.toml", []byte("[web]\ntailnet = { auth_key = '${TS_AUTHKEY}' }\n\n[web.users]\n'ann@example.com' = 'read, input'\n"))
	if err != nil {
		t.Fatal(err)
	}
	tn := cfg.Web.Tailnet
	if tn == nil || tn.Hostname != "harness" || tn.AuthKey != "${TS_AUTHKEY}" || tn.State != "" || tn.ControlURL != "" {
		t.Fatalf("tailnet %+v", tn)
	}
	if g := cfg.Web.Users["ann@example.com"]; len(g) != 2 || g[0] != "read" || g[1] != "input" {
		t.Fatalf("users %v", cfg.Web.Users)
	}
	other := *cfg
	other.Web.Users = map[string][]string{"bob@example.com": {"read"}}
	if !cfg.Web.SameListeners(other.Web) {
		t.Fatal("a change of users alone asks for a restart")
	}
	tn2 := *tn
	tn2.Hostname = "other"
	other.Web.Tailnet = &tn2
	if cfg.Web.SameListeners(other.Web) {
		t.Fatal("a change of the tailnet's hostname applies without a restart")
	}
}
