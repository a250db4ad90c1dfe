package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/errcode"
)

func TestParseRemoteUpstream(t *testing.T) {
	src := `
[mcp.gh]
url = "https://api.example.com/mcp"
env_file = "/etc/harness/gh.env"
headers = { Authorization = "Bearer ${GH_TOKEN}", "X-Org" = "${ORG}" }
env = { ORG = "acme" }
call_timeout_s = 30
restart_delay = 2
write_tools = ["create_*"]

[mcp.local]
url = "http://127.0.0.1:8080/mcp"
headers = { Authorization = "Bearer ${T}" }
env = { T = "x" }
`
	cfg, err := Parse("harness.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	gh := cfg.Upstreams["gh"]
	if !gh.Remote() || gh.URL != "https://api.example.com/mcp" || gh.Cmd != "" ||
		gh.Headers["Authorization"] != "Bearer ${GH_TOKEN}" || gh.Headers["X-Org"] != "${ORG}" ||
		gh.CallTimeout.Seconds() != 30 || gh.RestartDelay.Seconds() != 2 || gh.EnvFile != "/etc/harness/gh.env" ||
		!slices.Equal(gh.Tools.WriteTools, []string{"create_*"}) {
		t.Errorf("gh: %+v", gh)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	if cfg.Upstreams["local"].Remote() != true {
		t.Error("local is not remote")
	}
	if gh.OAuth != nil {
		t.Errorf("gh has OAuth %+v without auth = \"oauth\"", gh.OAuth)
	}
}

func TestParseOAuthUpstream(t *testing.T) {
	cfg, err := Parse("harness.toml", []byte("[mcp.a]\nurl = 'https://h/mcp'\nauth = 'oauth'\n[mcp.b]\nurl = 'https://h/mcp'\nauth = 'oauth'\nclient_id = 'harness-cli'\nscopes = ['repo', 'read:org']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Upstreams["a"].OAuth; a == nil || a.ClientID != "" || a.Scopes != nil {
		t.Errorf("a: %+v", a)
	}
	if b := cfg.Upstreams["b"].OAuth; b == nil || b.ClientID != "harness-cli" || !slices.Equal(b.Scopes, []string{"repo", "read:org"}) {
		t.Errorf("b: %+v", b)
	}
}

// TestScenario_RemoteUpstreamConfigErrors pins the load errors of a remote
// upstream (docs/design/mcp.md): both cmd and url, neither, a URL that is not http(s), an unset
// ${VAR}, and the keys of one kind used with the other.
func TestScenario_RemoteUpstreamConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"both cmd and url", "[mcp.x]\ncmd = 'srv'\nurl = 'https://h/mcp'\n",
			[]string{"harness.toml:1: mcp.x: cmd and url are both set: an upstream is a process (cmd) or a remote server (url), not both"}},
		{"neither", "[mcp.x]\nenv = { A = 'b' }\n",
			[]string{"harness.toml:1: mcp.x: cmd or url is required"}},
		{"ftp", "[mcp.x]\nurl = 'ftp://h/mcp'\n",
			[]string{"harness.toml:2: mcp.x.url: want an http:// or https:// URL, not ftp://"}},
		{"no scheme", "[mcp.x]\nurl = 'h/mcp'\n",
			[]string{"harness.toml:2: mcp.x.url: want an http:// or https:// URL (no scheme given)"}},
		{"no host", "[mcp.x]\nurl = 'https:///mcp'\n",
			[]string{"harness.toml:2: mcp.x.url: the URL has no host"}},
		{"unset var without env_file", "[mcp.x]\nurl = 'https://h/mcp'\nenv = { ORG = 'acme' }\nheaders = { Authorization = 'Bearer ${TOKEN}', X-Org = '${ORG}' }\n",
			[]string{"harness.toml:4: mcp.x.headers.Authorization: ${TOKEN} is not set: define it in env or in an env_file"}},
		{"headers on a process", "[mcp.x]\ncmd = 'srv'\nheaders = { A = 'b' }\n",
			[]string{"harness.toml:3: mcp.x.headers: only for a remote upstream (url)"}},
		{"args and workdir on a remote", "[mcp.x]\nurl = 'https://h/mcp'\nargs = ['a']\nworkdir = '/tmp'\n", []string{
			"harness.toml:3: mcp.x.args: only for a process upstream (cmd); this one has url",
			"harness.toml:4: mcp.x.workdir: only for a process upstream (cmd); this one has url"}},
		{"transport header", "[mcp.x]\nurl = 'https://h/mcp'\n[mcp.x.headers]\nMcp-Session-Id = 'x'\n",
			[]string{`harness.toml:4: mcp.x.headers.Mcp-Session-Id: header "Mcp-Session-Id" is set by the Streamable HTTP transport`}},
		{"bad reference", "[mcp.x]\nurl = 'https://h/mcp'\n[mcp.x.headers]\nA = '${OPEN'\nB = '${9X}'\n", []string{
			`harness.toml:4: mcp.x.headers.A: "${" without its closing "}"`,
			`harness.toml:5: mcp.x.headers.B: ${9X}: a variable name is letters, digits and _, not starting with a digit`}},
		{"url not a string", "[mcp.x]\nurl = 3\n",
			[]string{"harness.toml:2: mcp.x.url: must be a string, not an integer"}},
		{"auth not oauth or none", "[mcp.x]\nurl = 'https://h/mcp'\nauth = 'basic'\n",
			[]string{`harness.toml:3: mcp.x.auth: invalid auth "basic" (want "none" or "oauth")`}},
		{"client_id without oauth", "[mcp.x]\nurl = 'https://h/mcp'\nclient_id = 'c'\nscopes = ['a']\n", []string{
			`harness.toml:3: mcp.x.client_id: only with auth = "oauth"`,
			`harness.toml:4: mcp.x.scopes: only with auth = "oauth"`}},
		{"oauth on a process", "[mcp.x]\ncmd = 'srv'\nauth = 'oauth'\n",
			[]string{"harness.toml:3: mcp.x.auth: only for a remote upstream (url)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("harness.toml", []byte(tt.src))
			if !errors.Is(err, errcode.ErrConfigInvalid) {
				t.Fatalf("err = %v, want config_invalid", err)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// An env_file may define what env does not: the check waits for the
// connect, when the file is read (it is never read at load).
func TestRemoteVarsFromEnvFileAreCheckedAtConnect(t *testing.T) {
	cfg, err := Parse("harness.toml", []byte("[mcp.x]\nurl = 'https://h/mcp'\nenv_file = '/nonexistent/x.env'\nheaders = { Authorization = 'Bearer ${TOKEN}' }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Upstreams["x"].Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Fatalf("%+v", cfg.Upstreams["x"])
	}
}

func TestRemoteErrorsAndWarningsHideCredentials(t *testing.T) {
	cfg, err := Parse("harness.toml", []byte("[mcp.x]\nurl = 'http://user:pw-s3cret@example.com/mcp'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "mcp.x.url: plain http to example.com") ||
		strings.Contains(cfg.Warnings[0], "pw-s3cret") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	_, err = Parse("harness.toml", []byte("[mcp.x]\nurl = 'gopher://user:pw-s3cret@h/'\nheaders = { A = 'lit-s3cret ${' }\n"))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows a credential: %v", err)
	}
}
