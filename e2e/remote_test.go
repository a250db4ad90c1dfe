//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

// Remote upstreams (docs/design/mcp.md) end to end: a real Streamable
// HTTP server on loopback (the go-sdk's handler serving the demo tools,
// with the faults a test needs) behind a real daemon, reached through
// `harness mcp` and watched through the CLI.

// remoteTable declares a remote upstream KEY at url; extra is appended.
func remoteTable(key, url, extra string) string {
	return fmt.Sprintf("\n[mcp.%s]\nurl = %q\nrestart_delay = 1\n%s\n", key, url, extra)
}

// bearerFromEnvFile is the headers table that takes the token from an
// env_file, and writes that file.
func bearerFromEnvFile(t *testing.T, path, token string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("REMOTE_TOKEN="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("env_file = %q\nheaders = { Authorization = \"Bearer ${REMOTE_TOKEN}\" }", path)
}

// startHTTPUpstream runs the demo tools over Streamable HTTP on a loopback
// port until the test ends.
func startHTTPUpstream(t *testing.T, name string) *demoupstream.HTTPServer {
	t.Helper()
	srv := demoupstream.NewHTTPServer(name)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// remoteUpstreamRow is one row of `mcp status --json` with the remote fields.
type remoteUpstreamRow struct {
	Key       string  `json:"key"`
	URL       string  `json:"url"`
	State     string  `json:"state"`
	PID       int     `json:"pid"`
	Tools     int     `json:"tools"`
	Restarts  int     `json:"restarts"`
	LastError string  `json:"last_error"`
	NextRetry *string `json:"next_retry"`
}

func (f *fleet) remoteRow(key string) remoteUpstreamRow {
	f.T.Helper()
	var rows []remoteUpstreamRow
	f.MustJSON(&rows, "mcp", "status")
	for _, r := range rows {
		if r.Key == key {
			return r
		}
	}
	f.T.Fatalf("mcp status has no %s: %+v", key, rows)
	return remoteUpstreamRow{}
}

// outputs collects everything the CLI printed, for secret greps.
type outputs struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *outputs) run(f *fleet, args ...string) string {
	out, errOut, _ := f.Run(args...)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.WriteString(out)
	o.b.WriteString(errOut)
	return out
}

func (o *outputs) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// capturedSession is `harness mcp` as an agent runs it, with every frame
// both ways captured and progress notifications collected.
type capturedSession struct {
	*mcp.ClientSession
	mu       sync.Mutex
	frames   bytes.Buffer
	progress []*mcp.ProgressNotificationParams
	changed  chan struct{}
}

func (f *fleet) capturedSession() *capturedSession {
	f.T.Helper()
	c := &capturedSession{changed: make(chan struct{}, 64)}
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e-remote", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params)
			c.mu.Unlock()
			c.changed <- struct{}{}
		},
	})
	tr := &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: lockedWriter{&c.mu, &c.frames}}
	s, err := cl.Connect(ctx, tr, nil)
	if err != nil {
		f.T.Fatalf("connect harness mcp: %v", err)
	}
	f.T.Cleanup(func() { s.Close() })
	c.ClientSession = s
	return c
}

// progressFor returns the progress notifications seen for token.
func (c *capturedSession) progressFor(token string) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []float64
	for _, p := range c.progress {
		if p.ProgressToken == token {
			out = append(out, p.Progress)
		}
	}
	return out
}

func (c *capturedSession) framesText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames.String()
}

// TestScenario_RemoteUpstreamThroughHarnessMCP: a remote upstream that
// requires a bearer token taken from an env_file serves calls, progress
// and cancellation through `harness mcp` like a process upstream; mcp
// status and describe show its url and header names; the token shows in
// no file the daemon writes, no CLI output and no MCP frame.
func TestScenario_RemoteUpstreamThroughHarnessMCP(t *testing.T) {
	const secret = "remote-e2e-b3arer-5c2f9a71"
	srv := startHTTPUpstream(t, "remote-e2e")
	srv.RequireBearer(secret)
	dir := t.TempDir()
	f := newFleet(t, remoteTable("remote", srv.URL(), bearerFromEnvFile(t, filepath.Join(dir, "remote.env"), secret)+"\ncall_timeout_s = 60"))
	var out outputs
	s := f.capturedSession()
	waitTool(t, f, s.ClientSession, "remote__echo")

	if got := text(t, callTool(t, s.ClientSession, "remote__echo", map[string]any{"text": "over http"})); got != "over http" {
		t.Fatalf("remote__echo answered %q", got)
	}
	// A server that echoes the request's headers hands back no token.
	if got := text(t, callTool(t, s.ClientSession, "remote__whoami", map[string]any{})); got != "you sent Authorization: (hidden)" {
		t.Fatalf("remote__whoami answered %q", got)
	}
	res := callTool(t, s.ClientSession, "remote__fail", map[string]any{"message": "nope"})
	if !res.IsError || text(t, res) != "upstream remote: nope" {
		t.Fatalf("an upstream error keeps its message, naming the upstream: %+v", res)
	}

	params := &mcp.CallToolParams{Name: "remote__progress", Arguments: map[string]any{"steps": 3}}
	params.SetProgressToken("p-remote")
	if res, err := s.CallTool(context.Background(), params); err != nil || res.IsError || text(t, res) != "done" {
		t.Fatalf("remote__progress: %v %+v", err, res)
	}
	// The daemon sends them before the result; this client handles them
	// on a queue of its own, so the last may land just after CallTool.
	f.WaitFor("3 progress notifications", 5*time.Second, func() bool { return len(s.progressFor("p-remote")) >= 3 })
	if got := s.progressFor("p-remote"); !slices.Equal(got, []float64{1, 2, 3}) {
		t.Fatalf("progress through harness mcp: %v, want 1 2 3", got)
	}

	// Cancellation: the slow tool says "started" as progress, then waits.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "remote__slow", Arguments: map[string]any{"ms": 60000}}
		p.SetProgressToken("p-slow")
		_, err := s.CallTool(ctx, p)
		done <- err
	}()
	f.WaitFor("the slow call to run upstream", 20*time.Second, func() bool { return len(s.progressFor("p-slow")) > 0 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	if got := strings.TrimSpace(text(t, callTool(t, s.ClientSession, "remote__cancelled", map[string]any{"at_least": 1}))); got != "1" {
		t.Fatalf("cancellations seen by the server: %q", got)
	}

	// Classes and grants as for any upstream: add_tool has no readOnlyHint,
	// so it is write: hidden from this read-only session, refused if
	// called, listed for a session that may write.
	if slices.Contains(toolNames(t, s.ClientSession), "remote__add_tool") {
		t.Fatal("a read-only session lists the write tool remote__add_tool")
	}
	if code := errorCode(t, callTool(t, s.ClientSession, "remote__add_tool", map[string]any{"name": "x"})); code != "not_permitted" {
		t.Fatalf("a write tool called from a read-only session: %q", code)
	}
	if w := f.mcpSession("", true, nil); !slices.Contains(toolNames(t, w), "remote__add_tool") {
		t.Fatal("a session that may write does not list remote__add_tool")
	}

	row := f.remoteRow("remote")
	if row.URL != srv.URL() || row.State != "running" || row.PID != 0 || row.Tools < 9 || row.LastError != "" {
		t.Fatalf("mcp status: %+v", row)
	}
	if txt := out.run(f, "mcp", "status"); !strings.Contains(txt, srv.URL()) || !strings.Contains(txt, "running") {
		t.Fatalf("mcp status table:\n%s", txt)
	}
	var d struct {
		Config struct {
			URL     string            `json:"url"`
			Headers []string          `json:"headers"`
			EnvFile string            `json:"env_file"`
			Env     map[string]string `json:"env"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out.run(f, "describe", "mcp.remote", "--json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.Config.URL != srv.URL() || !slices.Equal(d.Config.Headers, []string{"Authorization"}) || d.Config.EnvFile == "" {
		t.Fatalf("describe: %+v", d.Config)
	}
	if txt := out.run(f, "describe", "mcp.remote"); !strings.Contains(txt, "headers:        Authorization") {
		t.Fatalf("describe:\n%s", txt)
	}
	if srv.Authorized() == 0 {
		t.Fatal("the server saw no request with the token")
	}
	for _, verb := range [][]string{{"mcp", "status", "--json"}, {"daemon-info", "--json"}, {"daemon-info"},
		{"logs", "mcp.remote", "--json"}, {"logs", "mcp.remote", "--raw"}, {"runs", "--json"}, {"reload"}} {
		out.run(f, verb...)
	}
	f.Stop()
	if strings.Contains(out.String(), secret) {
		t.Error("the CLI printed the token")
	}
	if strings.Contains(s.framesText(), secret) {
		t.Error("an MCP frame carries the token")
	}
	assertNoSecret(t, secret, f.State, f.LogPath)
}

// TestScenario_RemoteUpstreamServerRestart: the server goes away: calls
// answer upstream_unavailable naming the upstream and mcp status says
// why and when the next attempt is; it comes back on the same port: the
// same session's calls succeed again, no session touched.
func TestScenario_RemoteUpstreamServerRestart(t *testing.T) {
	srv := startHTTPUpstream(t, "remote-restart")
	f := newFleet(t, remoteTable("remote", srv.URL(), ""))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "remote__echo")
	callTool(t, s, "remote__echo", map[string]any{"text": "before"})

	srv.Stop()
	var res *mcp.CallToolResult
	f.WaitFor("upstream_unavailable", 15*time.Second, func() bool {
		res = callTool(t, s, "remote__echo", map[string]any{"text": "down"})
		return errorCode(t, res) == "upstream_unavailable"
	})
	if !strings.Contains(text(t, res), "upstream remote") {
		t.Fatalf("the outage should name the upstream: %q", text(t, res))
	}
	var row remoteUpstreamRow
	f.WaitFor("mcp status to show the outage", 15*time.Second, func() bool {
		row = f.remoteRow("remote")
		return row.State != "running" && row.LastError != "" && row.NextRetry != nil
	})
	if !slices.Contains(toolNames(t, s), "remote__echo") {
		t.Fatal("the tools of a down upstream must stay listed")
	}

	if err := srv.Start(""); err != nil {
		t.Fatal(err)
	}
	f.WaitFor("calls to succeed on the same session", 30*time.Second, func() bool {
		r := callTool(t, s, "remote__echo", map[string]any{"text": "back"})
		return !r.IsError && text(t, r) == "back"
	})
	row = f.remoteRow("remote")
	if row.State != "running" || row.Restarts < 1 || row.LastError != "" {
		t.Fatalf("after the server came back: %+v", row)
	}

	// Stop and start work on a connection as on a process.
	f.MustRun("stop", "mcp.remote")
	if row = f.remoteRow("remote"); row.State != "stopped" || row.NextRetry != nil {
		t.Fatalf("after stop: %+v", row)
	}
	if code := errorCode(t, callTool(t, s, "remote__echo", map[string]any{"text": "x"})); code != "upstream_unavailable" {
		t.Fatalf("a call to a stopped upstream: %q", code)
	}
	f.MustRun("start", "mcp.remote")
	f.WaitFor("the upstream to run again", 20*time.Second, func() bool { return f.remoteRow("remote").State == "running" })
	if got := text(t, callTool(t, s, "remote__echo", map[string]any{"text": "started"})); got != "started" {
		t.Fatalf("after start: %q", got)
	}
}

// TestScenario_RemoteUpstreamUnauthorized: a rejected token shows in mcp
// status as an HTTP 401 with the URL and what to check, calls answer
// upstream_unavailable, and a token rotated in the env_file is picked up
// by the next reconnect, without a reload.
func TestScenario_RemoteUpstreamUnauthorized(t *testing.T) {
	const wrong, right = "wrong-t0ken-e2e-0a1b", "right-t0ken-e2e-9c8d"
	srv := startHTTPUpstream(t, "remote-401")
	srv.RequireBearer(right)
	envFile := filepath.Join(t.TempDir(), "remote.env")
	f := newFleet(t, remoteTable("remote", srv.URL(), bearerFromEnvFile(t, envFile, wrong)))
	var out outputs
	want := "HTTP 401 Unauthorized from " + srv.URL() + ": check the headers of [mcp.remote]"
	var row remoteUpstreamRow
	f.WaitFor("mcp status to show the 401", 20*time.Second, func() bool {
		row = f.remoteRow("remote")
		return strings.Contains(row.LastError, want)
	})
	if row.State == "running" {
		t.Fatalf("a refused upstream is running: %+v", row)
	}
	if txt := out.run(f, "mcp", "status"); !strings.Contains(txt, want) {
		t.Fatalf("mcp status table lacks the reason:\n%s", txt)
	}
	s := f.mcpSession("", false, nil)
	if code := errorCode(t, callTool(t, s, "remote__echo", map[string]any{"text": "x"})); code != "upstream_unavailable" {
		t.Fatalf("a call to a refused upstream: %q", code)
	}

	bearerFromEnvFile(t, envFile, right)
	f.WaitFor("the rotated token to be used", 60*time.Second, func() bool {
		return f.remoteRow("remote").State == "running"
	})
	waitTool(t, f, s, "remote__echo")
	if got := text(t, callTool(t, s, "remote__echo", map[string]any{"text": "let in"})); got != "let in" {
		t.Fatalf("echo after the rotation: %q", got)
	}
	out.run(f, "describe", "mcp.remote", "--json")
	out.run(f, "logs", "mcp.remote")
	f.Stop()
	for _, tok := range []string{wrong, right} {
		if strings.Contains(out.String(), tok) {
			t.Errorf("the CLI printed token %s", tok)
		}
		assertNoSecret(t, tok, f.State, f.LogPath)
	}
}

// TestScenario_RemoteUpstreamConfigErrors: a reload with a broken remote
// upstream is refused naming the key, and the running fleet stays.
func TestScenario_RemoteUpstreamConfigErrors(t *testing.T) {
	srv := startHTTPUpstream(t, "remote-cfg")
	good := remoteTable("good", srv.URL(), "")
	f := newFleet(t, good)
	for want, bad := range map[string]string{
		"mcp.both: cmd and url are both set":                        "\n[mcp.both]\ncmd = \"x\"\nurl = \"https://h/mcp\"\n",
		"mcp.neither: cmd or url is required":                       "\n[mcp.neither]\nrestart_delay = 1\n",
		"mcp.ftp.url: want an http:// or https:// URL, not ftp://":  "\n[mcp.ftp]\nurl = \"ftp://h/mcp\"\n",
		"mcp.unset.headers.Authorization: ${NOPE} is not set":       "\n[mcp.unset]\nurl = \"https://h/mcp\"\nheaders = { Authorization = \"Bearer ${NOPE}\" }\n",
		"mcp.hdr.headers.Mcp-Session-Id: header \"Mcp-Session-Id\"": "\n[mcp.hdr]\nurl = \"https://h/mcp\"\nheaders = { Mcp-Session-Id = \"x\" }\n",
	} {
		f.WriteConfig(good + bad)
		_, errOut, code := f.Run("reload")
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("reload with %q: exit %d, %q", bad, code, errOut)
		}
	}
	var rows []remoteUpstreamRow
	f.MustJSON(&rows, "mcp", "status")
	if len(rows) != 1 || rows[0].Key != "good" || rows[0].URL != srv.URL() {
		t.Fatalf("a refused config changed the upstreams: %+v", rows)
	}
}
