//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/proctest"
)

// upstreamTable declares the built-in demo server as upstream KEY; the
// marker argument makes its processes countable in /proc.
func upstreamTable(key, marker, extra string) string {
	return fmt.Sprintf("\n[mcp.%s]\ncmd = %q\nargs = [\"demo-upstream\", \"--name\", %q]\n%s\n", key, harnessBin, marker, extra)
}

// procsWithArg lists live pids that have arg as an argument.
func procsWithArg(arg string) []int { return proctest.WithArg(arg) }

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// waitTool waits until a session lists a tool (the upstream handshake runs
// after the daemon starts).
func waitTool(t *testing.T, f *fleet, s *mcp.ClientSession, name string) {
	t.Helper()
	f.WaitFor("tool "+name, 20*time.Second, func() bool {
		for _, n := range toolNames(t, s) {
			if n == name {
				return true
			}
		}
		return false
	})
}

func TestScenario_UpstreamServerDeclaredOnceStartedOnce(t *testing.T) {
	dir := t.TempDir()
	marker := "once-" + filepath.Base(dir)
	cfg := upstreamTable("x", marker, "")
	for i := range 6 {
		cfg += tokenHarness(fmt.Sprintf("agent%d", i), dir, "")
	}
	f := newFleet(t, cfg)
	var wg sync.WaitGroup
	for i := range 6 {
		s := f.mcpSession(token(t, filepath.Join(dir, fmt.Sprintf("agent%d.token", i))), false, nil)
		waitTool(t, f, s, "x__echo")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("from agent%d", i)
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "x__echo", Arguments: map[string]any{"text": want}})
			if err != nil || res.IsError || text(t, res) != want {
				t.Errorf("agent%d: %v %+v", i, err, res)
			}
		}(i)
	}
	wg.Wait()
	if pids := procsWithArg(marker); len(pids) != 1 {
		t.Fatalf("%d upstream processes for six sessions, want exactly 1: %v", len(pids), pids)
	}
}

func TestScenario_TwoUpstreamsOfferingTheSameToolName(t *testing.T) {
	f := newFleet(t, upstreamTable("alpha", "alpha-inst", "")+upstreamTable("beta", "beta-inst", ""))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "alpha__search")
	waitTool(t, f, s, "beta__search")
	for key, inst := range map[string]string{"alpha": "alpha-inst", "beta": "beta-inst"} {
		res := callTool(t, s, key+"__search", map[string]any{"query": "q"})
		if res.IsError || !strings.HasPrefix(text(t, res), inst+":") {
			t.Fatalf("%s__search answered %q (%+v)", key, text(t, res), res)
		}
	}
	if code := errorCode(t, callTool(t, s, "gamma__search", map[string]any{"query": "q"})); code != "unknown_namespace" {
		t.Fatalf("unknown namespace: %q", code)
	}
	if code := errorCode(t, callTool(t, s, "alpha__nope", nil)); code != "unknown_tool" {
		t.Fatalf("unknown tool of a known upstream: %q", code)
	}
}

func TestScenario_InvalidUpstreamRejectedAtLoad(t *testing.T) {
	good := upstreamTable("good", "good-inst", "")
	f := newFleet(t, good)
	for name, bad := range map[string]string{
		"mcp.broken":    "\n[mcp.broken]\nargs = [\"x\"]\n",
		"mcp.harness-x": "\n[mcp.harness-x]\ncmd = \"true\"\n",
	} {
		f.WriteConfig(good + bad)
		_, errOut, code := f.Run("reload")
		if code == 0 || !strings.Contains(errOut, name) {
			t.Fatalf("reload with %s: exit %d, %q", name, code, errOut)
		}
		var st []struct {
			Key string `json:"key"`
		}
		f.MustJSON(&st, "mcp", "status")
		if len(st) != 1 || st[0].Key != "good" {
			t.Fatalf("a refused config registered upstreams: %+v", st)
		}
	}
}

func TestScenario_UpstreamCrashIsIsolated(t *testing.T) {
	dir := t.TempDir()
	marker := "crash-" + filepath.Base(dir)
	f := newFleet(t, upstreamTable("x", marker, "restart_delay = 3")+tokenHarness("agent", dir, ""))
	agent := f.waitState("agent", "running")
	s := f.mcpSession(token(t, filepath.Join(dir, "agent.token")), false, nil)
	waitTool(t, f, s, "x__echo")
	pids := procsWithArg(marker)
	if len(pids) != 1 {
		t.Fatalf("upstream processes: %v", pids)
	}
	syscall.Kill(pids[0], syscall.SIGKILL)
	// In the gap the tool stays listed and calls are refused with a code.
	var res *mcp.CallToolResult
	f.WaitFor("upstream_unavailable", 10*time.Second, func() bool {
		res = callTool(t, s, "x__echo", map[string]any{"text": "hi"})
		return errorCode(t, res) == "upstream_unavailable"
	})
	if !strings.Contains(text(t, res), "x") {
		t.Fatalf("unavailable message should name the upstream: %q", text(t, res))
	}
	found := false
	for _, n := range toolNames(t, s) {
		found = found || n == "x__echo"
	}
	if !found {
		t.Fatal("tools of a down upstream must stay listed")
	}
	// It comes back after restart_delay and the same session reaches it.
	f.WaitFor("the upstream to be back", 20*time.Second, func() bool {
		r := callTool(t, s, "x__echo", map[string]any{"text": "back"})
		return !r.IsError && text(t, r) == "back"
	})
	if now := procsWithArg(marker); len(now) != 1 || now[0] == pids[0] {
		t.Fatalf("after restart: %v (old %d)", now, pids[0])
	}
	if a := f.unit("agent"); a.PID != agent.PID || a.State != "running" {
		t.Fatalf("harness disturbed by an upstream crash: %+v", a)
	}
	var st []struct {
		Restarts int `json:"restarts"`
	}
	f.MustJSON(&st, "mcp", "status")
	if len(st) != 1 || st[0].Restarts < 1 {
		t.Fatalf("mcp status after crash: %+v", st)
	}
}

func TestScenario_ConcurrentCallersAreIsolated(t *testing.T) {
	f := newFleet(t, upstreamTable("x", "conc-inst", ""))
	slowS := f.mcpSession("", false, nil)
	waitTool(t, f, slowS, "x__slow")
	slowDone := make(chan error, 1)
	go func() {
		_, err := slowS.CallTool(context.Background(), &mcp.CallToolParams{Name: "x__slow", Arguments: map[string]any{"ms": 3000}})
		slowDone <- err
	}()
	var wg sync.WaitGroup
	for i := range 4 {
		s := f.mcpSession("", false, nil)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := range 5 {
				want := fmt.Sprintf("s%d-c%d", i, j)
				start := time.Now()
				res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "x__echo", Arguments: map[string]any{"text": want}})
				if err != nil || res.IsError || text(t, res) != want {
					t.Errorf("session %d call %d: %v %+v", i, j, err, res)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("a fast call waited %s behind a slow one", d)
				}
			}
		}(i)
	}
	wg.Wait()
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
}

func TestBroker_CancelledCallReachesUpstream(t *testing.T) {
	f := newFleet(t, upstreamTable("x", "cancel-inst", ""))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "x__slow")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "x__slow", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the call reach the upstream; there is no event for "in flight"
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	f.WaitFor("the upstream to count the cancellation", 10*time.Second, func() bool {
		return strings.TrimSpace(text(t, callTool(t, s, "x__cancelled", nil))) == "1"
	})
}

func TestScenario_UpstreamSecretsAreNotPersisted(t *testing.T) {
	dir := t.TempDir()
	const secret = "upstream-s3cret-4b9d"
	envFile := filepath.Join(dir, "up.env")
	os.WriteFile(envFile, []byte("UP_TOKEN="+secret+"\n"), 0o600)
	f := newFleet(t, upstreamTable("x", "secret-inst", fmt.Sprintf("env_file = %q", envFile)))
	var frames bytes.Buffer
	var mu sync.Mutex
	captured := f.mcpSessionTransport(func(tr mcp.Transport) mcp.Transport {
		return &mcp.LoggingTransport{Transport: tr, Writer: lockedWriter{&mu, &frames}}
	})
	waitTool(t, f, captured, "x__echo")
	callTool(t, captured, "x__echo", map[string]any{"text": "hello"})
	callTool(t, captured, "x__fail", map[string]any{"message": "nope"})
	// The child has the value in its environment, and a tool that echoes
	// it answers it masked (a process upstream's own env_file
	// values are masked in its results like a remote one's headers).
	pids := procsWithArg("secret-inst")
	if len(pids) != 1 {
		t.Fatalf("upstream processes: %v", pids)
	}
	if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pids[0])); err != nil || !bytes.Contains(environ, []byte("UP_TOKEN="+secret+"\x00")) {
		t.Fatalf("the upstream's environment lacks UP_TOKEN (%v)", err)
	}
	probe := f.mcpSession("", false, nil)
	if got := text(t, callTool(t, probe, "x__env", map[string]any{"key": "UP_TOKEN"})); got != "[masked]" {
		t.Fatalf("upstream env UP_TOKEN answered %q, want it masked", got)
	}
	for _, verb := range [][]string{{"mcp", "status", "--json"}, {"daemon-info", "--json"}, {"logs", "mcp.x", "--json"}, {"describe", "mcp.x", "--json"}} {
		if out, _, _ := f.Run(verb...); strings.Contains(out, secret) {
			t.Errorf("harness %v printed the secret", verb)
		}
	}
	mu.Lock()
	if strings.Contains(frames.String(), secret) {
		t.Error("captured MCP frames contain the env_file secret")
	}
	if frames.Len() == 0 {
		t.Error("no frames captured")
	}
	mu.Unlock()
	f.Stop()
	assertNoSecret(t, secret, f.State, f.LogPath)
}

func TestScenario_ShutdownReapsUpstreams(t *testing.T) {
	dir := t.TempDir()
	marker := "reap-" + filepath.Base(dir)
	// A shell that keeps a child, like an npx -> node chain.
	f := newFleet(t, fmt.Sprintf(`
[mcp.chain]
cmd = "sh"
args = ["-c", "exec 3<&0; %s demo-upstream --name %s <&3 & wait"]
`, harnessBin, marker))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "chain__echo")
	if pids := procsWithArg(marker); len(pids) != 1 {
		t.Fatalf("chain upstream processes: %v", pids)
	}
	shPids := procsWithArg(fmt.Sprintf("exec 3<&0; %s demo-upstream --name %s <&3 & wait", harnessBin, marker))
	if len(shPids) != 1 {
		t.Fatalf("chain shell processes: %v", shPids)
	}
	f.MustRun("shutdown")
	select {
	case <-f.Exited:
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not exit after shutdown")
	}
	f.WaitFor("upstream chain to be gone", 15*time.Second, func() bool {
		return len(procsWithArg(marker)) == 0
	})
	for _, p := range shPids {
		waitGone(t, "upstream shell", p)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// mcpSessionTransport is mcpSession with a transport wrapper (to capture
// frames).
func (f *fleet) mcpSessionTransport(wrap func(mcp.Transport) mcp.Transport) *mcp.ClientSession {
	f.T.Helper()
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=", "HARNESS_SOCKET=")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	s, err := cl.Connect(ctx, wrap(&mcp.CommandTransport{Command: cmd}), nil)
	if err != nil {
		f.T.Fatalf("connect: %v", err)
	}
	f.T.Cleanup(func() { s.Close() })
	return s
}

func TestBroker_OverlongToolNamesAreReportedNamingTheTool(t *testing.T) {
	key := "an-upstream-key-long-enough-that-its-tools-pass-the-limit"
	f := newFleet(t, upstreamTable(key, "long-inst", "")+upstreamTable("ok", "ok-inst", ""))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "ok__echo")
	var info struct {
		Warnings []string `json:"warnings"`
	}
	f.WaitFor("a warning naming the overlong tool", 15*time.Second, func() bool {
		f.MustJSON(&info, "daemon-info")
		for _, w := range info.Warnings {
			if strings.Contains(w, key+"__progress") {
				return true
			}
		}
		return false
	})
	for _, n := range toolNames(t, s) {
		if len(n) > 64 {
			t.Fatalf("served a tool name over 64 characters: %s", n)
		}
	}
}

// An upstream's tools/list_changed is re-listed by the broker and pushed to
// the sessions that see that upstream. (add_tool and the tools it adds
// carry no readOnlyHint, so they are write: the sessions hold write.)
func TestBroker_UpstreamListChangedReachesSessions(t *testing.T) {
	f := newFleet(t, upstreamTable("x", "listchanged-inst", ""))
	changed := make(chan struct{}, 8)
	watcher := f.mcpSession("", true, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	waitTool(t, f, watcher, "x__add_tool")
	for len(changed) > 0 {
		<-changed // the upstream's first listing
	}
	caller := f.mcpSession("", true, nil)
	if res := callTool(t, caller, "x__add_tool", map[string]any{"name": "fresh"}); res.IsError {
		t.Fatalf("add_tool: %+v", res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the upstream added a tool")
	}
	waitTool(t, f, watcher, "x__fresh")
}

// [mcp.KEY] call_timeout_s bounds a call: past it the caller gets
// upstream_unavailable saying so, and the upstream is told to cancel.
func TestBroker_CallTimeoutEndsAHangingCallAndCancelsItUpstream(t *testing.T) {
	f := newFleet(t, upstreamTable("x", "timeout-inst", "call_timeout_s = 1"))
	s := f.mcpSession("", false, nil)
	waitTool(t, f, s, "x__slow")
	begin := time.Now()
	res := callTool(t, s, "x__slow", map[string]any{"ms": 60000})
	took := time.Since(begin)
	if code := errorCode(t, res); code != "upstream_unavailable" || !strings.Contains(text(t, res), "call_timeout_s") {
		t.Fatalf("a call past call_timeout_s: code %q, %s", code, text(t, res))
	}
	if took < time.Second || took > 10*time.Second {
		t.Fatalf("the call ended after %s, want about call_timeout_s (1s)", took)
	}
	f.WaitFor("the upstream to count the cancellation", 10*time.Second, func() bool {
		return strings.TrimSpace(text(t, callTool(t, s, "x__cancelled", nil))) == "1"
	})
	// A call inside the bound is untouched.
	if res := callTool(t, s, "x__slow", map[string]any{"ms": 10}); res.IsError {
		t.Fatalf("a quick call: %s", text(t, res))
	}
}

// A session's first tools/list waits for upstreams that are still starting
// (a project's agent and its upstreams start together; a client that lists
// once would otherwise never see their tools), within a bound.
func TestBroker_FirstToolsListWaitsForStartingUpstreams(t *testing.T) {
	f := newFleet(t, fmt.Sprintf("\n[mcp.late]\ncmd = %q\nargs = [\"demo-upstream\", \"--name\", \"late-inst\", \"--start-delay\", \"2s\"]\n", harnessBin))
	s := f.mcpSession("", false, nil)
	if names := toolNames(t, s); !slices.Contains(names, "late__echo") {
		t.Fatalf("first tools/list without the starting upstream's tools: %v", names)
	}
}

// An upstream that cannot start at all does not hold the first list for
// the whole bound: it is down, not starting.
func TestBroker_FirstToolsListDoesNotWaitForABrokenUpstream(t *testing.T) {
	f := newFleet(t, "\n[mcp.broken]\ncmd = \"/nonexistent/mcp-server\"\n"+upstreamTable("ok", "first-list-ok", ""))
	s := f.mcpSession("", false, nil)
	begin := time.Now()
	names := toolNames(t, s)
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("the first tools/list took %s with a broken upstream", took)
	}
	if !slices.Contains(names, "ok__echo") {
		t.Fatalf("first tools/list: %v", names)
	}
}
