//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

func (f *fleet) mcpURL() string {
	f.T.Helper()
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	if !strings.HasPrefix(info.MCPURL, "http://127.0.0.1:") {
		f.T.Fatalf("daemon-info mcp_url = %q", info.MCPURL)
	}
	return info.MCPURL
}

func httpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
	s, err := cl.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: mcptest.Bearer{Token: token, Base: http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func initializeStatus(t *testing.T, url, token, host string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTP_BearerTokensScopeAndRebindingProtection(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n"+
		tokenHarness("boss", dir, `mcp_allow = ["read", "write"]`)+
		tokenHarness("reader", dir, "")+`
[harness.urlprobe]
cmd = "sh"
args = ["-c", "echo $HARNESS_MCP_URL > `+filepath.Join(dir, "url")+`; exec sleep 100000"]
enabled = true
`)
	url := f.mcpURL()
	f.WaitFor("HARNESS_MCP_URL in a harness", 15*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "url"))
		return strings.TrimSpace(string(b)) == url
	})

	boss := httpSession(t, url, token(t, filepath.Join(dir, "boss.token")))
	if got := toolNames(t, boss); !slices.Contains(got, "harness_restart") {
		t.Fatalf("boss over HTTP lists %v", got)
	}
	reader := httpSession(t, url, token(t, filepath.Join(dir, "reader.token")))
	if got := toolNames(t, reader); !slices.Equal(got, readTools) {
		t.Fatalf("reader over HTTP lists %v", got)
	}
	if code := errorCode(t, callTool(t, reader, "harness_stop", map[string]any{"name": "boss"})); code != "not_permitted" {
		t.Fatalf("reader write over HTTP: %q", code)
	}
	if res := callTool(t, boss, "harness_restart", map[string]any{"name": "urlprobe"}); res.IsError {
		t.Fatalf("boss restart over HTTP: %+v", res)
	}

	// The operator token, printed by `harness mcp token`, is read-only by default.
	op := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	if got := toolNames(t, httpSession(t, url, op)); !slices.Equal(got, readTools) {
		t.Fatalf("operator over HTTP lists %v", got)
	}

	if s := initializeStatus(t, url, "", ""); s != http.StatusUnauthorized {
		t.Fatalf("no token: %d", s)
	}
	if s := initializeStatus(t, url, "wrong", ""); s != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", s)
	}
	if s := initializeStatus(t, url, op, "evil.example:80"); s != http.StatusForbidden {
		t.Fatalf("foreign Host: %d", s)
	}
	// A token dies with its run.
	readerTok := token(t, filepath.Join(dir, "reader.token"))
	os.Remove(filepath.Join(dir, "reader.token"))
	f.MustRun("restart", "reader")
	token(t, filepath.Join(dir, "reader.token"))
	if s := initializeStatus(t, url, readerTok, ""); s != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", s)
	}

	// The snippet names the environment variable, never the token itself.
	snippet := f.MustRun("mcp", "config", "--client", "claude-code", "--http")
	if !strings.Contains(snippet, url) || !strings.Contains(snippet, "${HARNESS_MCP_TOKEN}") || strings.Contains(snippet, op) {
		t.Fatalf("http snippet: %s", snippet)
	}
}

func TestHTTP_NonLoopbackAddressFailsTheLoad(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "harness.toml")
	os.WriteFile(cfg, []byte("[daemon]\nmcp_http = \"0.0.0.0:7399\"\n"), 0o600)
	cmd := exec.Command(harnessBin, "daemon", "--config", cfg, "--socket", filepath.Join(dir, "s.sock"), "--state-dir", filepath.Join(dir, "state"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "harness.toml:2: daemon.mcp_http") {
		t.Fatalf("non-loopback mcp_http: err %v, %s", err, out)
	}
}

// TestScenario_McpTokenIsTheDaemonsWhateverTheCLIsStateDir: a daemon with
// its own --state-dir; `harness mcp token` from a CLI whose state dir is
// elsewhere prints the daemon's token (the one its endpoint accepts) and
// creates no token file of its own; without an endpoint, or without a
// daemon, it says so and creates nothing.
func TestScenario_McpTokenIsTheDaemonsWhateverTheCLIsStateDir(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n")
	url := f.mcpURL()
	cliState := filepath.Join(t.TempDir(), "cli-state")
	tok := strings.TrimSpace(f.MustRun("--state-dir", cliState, "mcp", "token"))
	if _, err := os.Stat(cliState); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the CLI made its own state dir (%v): a token there is one the daemon refuses", err)
	}
	if s := initializeStatus(t, url, tok, ""); s != http.StatusOK {
		t.Fatalf("the printed token gets %d from the daemon's endpoint", s)
	}
	var j struct {
		Token string `json:"token"`
	}
	f.MustJSON(&j, "--state-dir", cliState, "mcp", "token")
	if j.Token != tok {
		t.Fatalf("--json token %q, want %q", j.Token, tok)
	}

	plain := newFleet(t, "")
	out, errOut, code := plain.Run("--state-dir", cliState, "mcp", "token")
	if code == 0 || !strings.Contains(errOut, "serves no MCP HTTP endpoint") {
		t.Fatalf("no endpoint: exit %d, %q %q", code, out, errOut)
	}
	plain.Stop()
	out, errOut, code = plain.Run("--state-dir", cliState, "mcp", "token")
	if code == 0 || !strings.Contains(errOut, "daemon") || strings.TrimSpace(out) != "" {
		t.Fatalf("no daemon: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Stat(cliState); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused mcp token left a state dir behind (%v)", err)
	}
}
