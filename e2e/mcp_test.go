//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/fdtest"
)

var (
	readTools  = []string{"harness_agents", "harness_daemon_info", "harness_describe", "harness_diff", "harness_get_trajectory", "harness_jobs", "harness_list", "harness_list_trajectories", "harness_logs", "harness_runs", "harness_screen", "harness_triggers"}
	writeTools = []string{"harness_delegate", "harness_land", "harness_new", "harness_restart", "harness_rm", "harness_start", "harness_stop", "harness_trigger"}
)

func TestScenario_FacadeMirrorsTheControlOperation(t *testing.T) {
	f := newFleet(t, sleeperConfig+`
[harness.idle]
cmd = "sleep"
args = ["100000"]
description = "never started"
`)
	f.MustRun("start", "sleeper")
	f.waitState("sleeper", "running")
	s := f.mcpSession("", false, nil)
	var viaMCP struct {
		Harnesses []unitInfo `json:"harnesses"`
	}
	resultJSON(t, callTool(t, s, "harness_list", nil), &viaMCP)
	var viaCLI []unitInfo
	f.MustJSON(&viaCLI, "list")
	if len(viaMCP.Harnesses) != len(viaCLI) {
		t.Fatalf("harness_list %+v vs list --json %+v", viaMCP.Harnesses, viaCLI)
	}
	for i := range viaCLI {
		m, c := viaMCP.Harnesses[i], viaCLI[i]
		if m.Name != c.Name || m.State != c.State || m.PID != c.PID || m.Enabled != c.Enabled {
			t.Errorf("row %d: mcp %+v, cli %+v", i, m, c)
		}
	}
}

func TestScenario_UnknownHarnessSurfacesTheStructuredError(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	s := f.mcpSession("", false, nil)
	res := callTool(t, s, "harness_describe", map[string]any{"name": "ghost"})
	if code := errorCode(t, res); code != "unknown_harness" {
		t.Fatalf("code %q, want unknown_harness (%+v)", code, res)
	}
	// Decision 7: an unknown tool is a result too, and the session goes on.
	if code := errorCode(t, callTool(t, s, "no_such_tool", nil)); code != "unknown_tool" {
		t.Fatalf("unknown tool: code %q", code)
	}
	if res := callTool(t, s, "harness_list", nil); res.IsError {
		t.Fatalf("session broken after refusals: %+v", res)
	}
}

func TestScenario_DefaultScopingRefusesAWrite(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, sleeperConfig+tokenHarness("agent", dir, ""))
	f.MustRun("start", "sleeper")
	before := f.waitState("sleeper", "running")
	s := f.mcpSession(token(t, filepath.Join(dir, "agent.token")), true, nil)
	if got := toolNames(t, s); !slices.Equal(got, readTools) {
		t.Fatalf("default scope lists %v, want only %v (the --allow-control flag adds nothing to an attributed session)", got, readTools)
	}
	res := callTool(t, s, "harness_stop", map[string]any{"name": "sleeper"})
	if code := errorCode(t, res); code != "not_permitted" {
		t.Fatalf("harness_stop with default scope: code %q", code)
	}
	if after := f.unit("sleeper"); after.State != "running" || after.PID != before.PID {
		t.Fatalf("a refused write changed state: %+v -> %+v", before, after)
	}
}

func TestScenario_GrantedScopingPermitsAWrite(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, sleeperConfig+tokenHarness("boss", dir, `mcp_allow = ["read", "write"]`))
	f.MustRun("start", "sleeper")
	before := f.waitState("sleeper", "running")
	s := f.mcpSession(token(t, filepath.Join(dir, "boss.token")), false, nil)
	if got := toolNames(t, s); !slices.Equal(got, slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...)))) {
		t.Fatalf("granted scope lists %v", got)
	}
	res := callTool(t, s, "harness_restart", map[string]any{"name": "sleeper"})
	if res.IsError {
		t.Fatalf("harness_restart: %+v", res)
	}
	after := f.waitState("sleeper", "running")
	if after.PID == before.PID {
		t.Fatal("sibling was not restarted")
	}
	// Exactly as `harness restart` would: a new manual run.
	var rs []struct {
		Cause string `json:"cause"`
	}
	f.MustJSON(&rs, "runs", "sleeper")
	if len(rs) != 2 || rs[1].Cause != "manual" {
		t.Fatalf("runs after MCP restart: %+v", rs)
	}
}

func TestScenario_ScopeChangeTakesEffectOnReload(t *testing.T) {
	dir := t.TempDir()
	base := sleeperConfig + tokenHarness("agent", dir, "")
	f := newFleet(t, base)
	f.MustRun("start", "sleeper")
	agentPID := f.waitState("agent", "running").PID
	changed := make(chan struct{}, 4)
	s := f.mcpSession(token(t, filepath.Join(dir, "agent.token")), false, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if code := errorCode(t, callTool(t, s, "harness_stop", map[string]any{"name": "sleeper"})); code != "not_permitted" {
		t.Fatalf("before widening: %q", code)
	}
	f.WriteConfig(sleeperConfig + tokenHarness("agent", dir, `mcp_allow = ["read", "write"]`))
	f.MustRun("reload")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after widening mcp_allow")
	}
	if res := callTool(t, s, "harness_stop", map[string]any{"name": "sleeper"}); res.IsError {
		t.Fatalf("after widening: %+v", res)
	}
	if u := f.unit("sleeper"); u.State != "stopped" {
		t.Fatalf("sleeper not stopped: %+v", u)
	}
	if u := f.unit("agent"); u.PID != agentPID {
		t.Fatal("the agent was restarted by a scope change")
	}
}

func TestADR0054_ReadOnlyByDefaultControlBehindFlag(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	ro := f.mcpSession("", false, nil)
	if got := toolNames(t, ro); !slices.Equal(got, readTools) {
		t.Fatalf("unattributed lists %v", got)
	}
	if code := errorCode(t, callTool(t, ro, "harness_start", map[string]any{"name": "sleeper"})); code != "not_permitted" {
		t.Fatalf("hidden write tool: code %q", code)
	}
	if u := f.unit("sleeper"); u.State != "stopped" {
		t.Fatalf("refused start changed state: %+v", u)
	}
	rw := f.mcpSession("", true, nil)
	if got := toolNames(t, rw); len(got) != len(readTools)+len(writeTools) {
		t.Fatalf("--allow-control lists %v", got)
	}
	if res := callTool(t, rw, "harness_start", map[string]any{"name": "sleeper"}); res.IsError {
		t.Fatalf("harness_start with --allow-control: %+v", res)
	}
	f.waitState("sleeper", "running")
}

func TestADR0054_LogsArePolledWithCursorAndOffset(t *testing.T) {
	f := newFleet(t, `
[harness.talker]
cmd = "sh"
args = ["-c", "for i in 1 2 3 4 5; do echo msg-$i; done; exec sleep 100000"]
enabled = true
`)
	s := f.mcpSession("", false, nil)
	type entry struct {
		ID   uint64 `json:"id"`
		Text string `json:"text"`
	}
	var sum struct {
		Entries    []entry `json:"entries"`
		NextCursor uint64  `json:"next_cursor"`
	}
	f.WaitFor("output", 15*time.Second, func() bool {
		resultJSON(t, callTool(t, s, "harness_logs", map[string]any{"name": "talker"}), &sum)
		for _, e := range sum.Entries {
			if e.Text == "msg-5" {
				return true
			}
		}
		return false
	})
	var newer struct {
		Entries []entry `json:"entries"`
	}
	resultJSON(t, callTool(t, s, "harness_logs", map[string]any{"name": "talker", "cursor": sum.NextCursor}), &newer)
	if len(newer.Entries) != 0 {
		t.Fatalf("cursor at the newest entry returned %+v", newer.Entries)
	}
	var rawPage struct {
		Text       string `json:"text"`
		NextOffset int64  `json:"next_offset"`
		Note       string `json:"note"`
	}
	resultJSON(t, callTool(t, s, "harness_logs", map[string]any{"name": "talker", "format": "raw", "offset": 1 << 40}), &rawPage)
	if rawPage.Note == "" || !strings.Contains(rawPage.Text, "msg-5") {
		t.Fatalf("raw offset past the end must repeat the tail with a note: %+v", rawPage)
	}
}

func TestADR0054_CallsInOneSessionRunConcurrently(t *testing.T) {
	f := newFleet(t, `
[harness.slowjob]
cmd = "sleep"
args = ["3"]
restart = "no"
`)
	s := f.mcpSession("", true, nil)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_trigger", Arguments: map[string]any{"name": "slowjob", "wait": true, "timeout_s": 30}})
		if err != nil {
			t.Errorf("trigger: %v", err)
		}
		done <- res
	}()
	f.waitState("slowjob", "running")
	start := time.Now()
	if res := callTool(t, s, "harness_list", nil); res.IsError {
		t.Fatalf("list: %+v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("harness_list waited %s behind a followed trigger", d)
	}
	select {
	case res := <-done:
		if res == nil || res.IsError {
			t.Fatalf("trigger: %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("trigger --wait never returned")
	}
}

func TestMCP_RevokedTokenAndDaemonDownAreRefusedClearly(t *testing.T) {
	dir := t.TempDir()
	f := newFleet(t, tokenHarness("agent", dir, ""))
	tokPath := filepath.Join(dir, "agent.token")
	old := token(t, tokPath)
	os.Remove(tokPath)
	f.MustRun("restart", "agent")
	if fresh := token(t, tokPath); fresh == old {
		t.Fatal("token not re-minted on restart")
	}
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN="+old)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "token") {
		t.Fatalf("revoked token: err %v, output %q", err, out)
	}
	f.Stop()
	cmd = exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "daemon not running") {
		t.Fatalf("daemon down: err %v, output %q", err, out)
	}
}

// TestMCP_BridgeStoppedBySIGTERMLeavesStdioBlocking: agents end their MCP
// server with SIGTERM. `harness mcp` polls its stdio (nonblocking on the
// shared open file description), so it must put the blocking mode back
// before it exits: the agent, or a shell wrapper, shares the description.
func TestMCP_BridgeStoppedBySIGTERMLeavesStdioBlocking(t *testing.T) {
	f := newFleet(t, "")
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close()
	// What a parent hands a child: blocking pipes. The test keeps inR, so
	// it can read the mode of the description it shares with the child.
	fdtest.SetBlocking(t, inR, outW)
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=")
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One request answered proves the session is up and stdio is polled.
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("ping answer %q, %v", line, err)
	}
	if !fdtest.Nonblocking(t, inR) {
		t.Fatal("during the session stdin is blocking: want it polled (O_NONBLOCK)")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("harness mcp after SIGTERM: %v (want a clean exit)", err)
	}
	for name, p := range map[string]*os.File{"stdin": inR, "stdout": outW} {
		if fdtest.Nonblocking(t, p) {
			t.Errorf("%s left nonblocking", name)
		}
	}
}

// TestMCP_PipedRequestsAreAllAnswered: a script writes its requests into
// `harness mcp` and closes stdin at once. Every call gets its answer, the
// slow one too, and then the bridge exits 0. (The SDK cancels in-flight
// calls when its reader sees EOF, so the transport holds EOF back until
// the calls it read are answered.)
func TestMCP_PipedRequestsAreAllAnswered(t *testing.T) {
	f := newFleet(t, upstreamTable("up", "piped-"+t.Name(), ""))
	// Its process running is not enough: calls are served once the broker
	// has its session and tool list.
	f.WaitFor("upstream up with its tools", 20*time.Second, func() bool {
		var st []struct {
			State string `json:"state"`
			Tools int    `json:"tools"`
		}
		f.MustJSON(&st, "mcp", "status")
		return len(st) == 1 && st[0].State == "running" && st[0].Tools > 0
	})
	reqs := strings.Join([]string{
		initializeLine,
		initializedLine,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__slow","arguments":{"ms":300}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"harness_list","arguments":{}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(harnessBin, "mcp", "--socket", f.Socket)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN=")
	cmd.Stdin = strings.NewReader(reqs)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness mcp: %v; stderr %q", err, stderr.String())
	}
	answers := map[float64]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var resp struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if resp.Error != nil {
			t.Fatalf("request %v answered with an error: %s", resp.ID, resp.Error)
		}
		answers[resp.ID] = string(resp.Result)
	}
	if len(answers) != 4 || !strings.Contains(answers[1], "slept 300ms") || !strings.Contains(answers[2], `"hi"`) ||
		!strings.Contains(answers[3], "harnesses") {
		t.Fatalf("answers = %v, want initialize and three tool results", answers)
	}
}

// Inline env values (tokens, URLs with credentials) are the operator's:
// describe over the CLI shows them, an MCP session sees the keys only.
func TestMCP_DescribeShowsEnvKeysNotValues(t *testing.T) {
	f := newFleet(t, `
[harness.agent]
cmd = "sleep"
args = ["100000"]
env = { API_URL = "https://user:hunter2@example.test", PLAIN = "visible-to-operator" }
`)
	s := f.mcpSession("", false, nil)
	res := callTool(t, s, "harness_describe", map[string]any{"name": "agent"})
	if res.IsError {
		t.Fatalf("harness_describe: %+v", res)
	}
	var viaMCP struct {
		Config struct {
			Env map[string]string `json:"env"`
		} `json:"config"`
	}
	resultJSON(t, res, &viaMCP)
	b, _ := json.Marshal(res)
	if text := string(b); strings.Contains(text, "hunter2") || strings.Contains(text, "visible-to-operator") {
		t.Fatalf("an MCP session saw env values: %s", b)
	}
	if len(viaMCP.Config.Env) != 2 || viaMCP.Config.Env["API_URL"] != "(hidden)" || viaMCP.Config.Env["PLAIN"] != "(hidden)" {
		t.Fatalf("MCP env = %v, want both keys with hidden values", viaMCP.Config.Env)
	}
	var viaCLI struct {
		Config struct {
			Env map[string]string `json:"env"`
		} `json:"config"`
	}
	f.MustJSON(&viaCLI, "describe", "agent")
	if viaCLI.Config.Env["PLAIN"] != "visible-to-operator" {
		t.Fatalf("the operator's describe lost the env values: %v", viaCLI.Config.Env)
	}
}

// An error about a huge argument carries a short prefix of it, once: the
// answer (text and structured body) stays small however big the argument
// (a 10 MB argument came back twice).
func TestMCP_ErrorsEchoOnlyAPrefixOfAnArgument(t *testing.T) {
	f := newFleet(t, sleeperConfig)
	s := f.mcpSession("", false, nil)
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"harness_describe", map[string]any{"name": big}, "unknown_harness"},
		{"harness_logs", map[string]any{"name": "sleeper", "format": big}, "invalid_argument"},
		{"harness_describe", map[string]any{"name": "sleeper", big: true}, "invalid_argument"},
		{"harness_" + big, nil, "unknown_tool"},
		{"nosuch__" + big, nil, "unknown_namespace"},
	} {
		res := callTool(t, s, c.tool, c.args)
		b, _ := json.Marshal(res)
		if code := errorCode(t, res); code != c.code || len(b) > 4096 {
			t.Errorf("%.20s…: code %q, answer %d bytes: %.300s", c.tool, code, len(b), b)
		}
	}
}
