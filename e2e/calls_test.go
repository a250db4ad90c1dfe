//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// callRecord is the shape of one `harness calls --json` record.
type callRecord struct {
	ID            uint64          `json:"id"`
	Time          time.Time       `json:"time"`
	Session       string          `json:"session"`
	Transport     string          `json:"transport"`
	Caller        string          `json:"caller"`
	Harness       string          `json:"harness"`
	RunID         uint64          `json:"run_id"`
	Kind          string          `json:"kind"`
	Tool          string          `json:"tool"`
	Class         string          `json:"class"`
	Outcome       string          `json:"outcome"`
	DurationMS    float64         `json:"duration_ms"`
	RequestBytes  int             `json:"request_bytes"`
	ResponseBytes int             `json:"response_bytes"`
	Args          json.RawMessage `json:"args"`
}

type callsAnswer struct {
	Calls      []callRecord `json:"calls"`
	NextCursor uint64       `json:"next_cursor"`
	Dropped    *uint64      `json:"dropped"`
}

func (f *fleet) calls(args ...string) callsAnswer {
	f.T.Helper()
	var a callsAnswer
	f.MustJSON(&a, append([]string{"calls"}, args...)...)
	if a.Dropped == nil {
		f.T.Fatalf("calls %v: no dropped count", args)
	}
	return a
}

func (f *fleet) runID(name string) uint64 {
	f.T.Helper()
	var d struct {
		CurrentRun struct {
			ID uint64 `json:"id"`
		} `json:"current_run"`
	}
	// The child may write its token file before the supervisor has noted
	// the run it spawned.
	f.WaitFor(name+"'s current run", 10*time.Second, func() bool {
		f.MustJSON(&d, "describe", name)
		return d.CurrentRun.ID != 0
	})
	return d.CurrentRun.ID
}

// callLogText is every byte the daemon wrote for the call log.
func (f *fleet) callLogText() string {
	f.T.Helper()
	var sb strings.Builder
	ents, err := os.ReadDir(filepath.Join(f.State, "calls"))
	if err != nil || len(ents) == 0 {
		f.T.Fatalf("no call log files: %v", err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(f.State, "calls", e.Name()))
		if err != nil {
			f.T.Fatal(err)
		}
		sb.Write(b)
	}
	return sb.String()
}

func getMetrics(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestScenario_WhoCalledWhatWhenAndHowItWent(t *testing.T) {
	dir := t.TempDir()
	pdir := t.TempDir()
	os.WriteFile(filepath.Join(pdir, "review.md"), []byte(reviewPrompt), 0o600)
	envSecret := fmt.Sprintf("env-secret-%d", time.Now().UnixNano())
	os.WriteFile(filepath.Join(dir, "up.env"), []byte("UP_TOKEN="+envSecret+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "boss.env"), []byte("BOSS_KEY="+envSecret+"\n"), 0o600)
	argSecret := fmt.Sprintf("arg-secret-%d", time.Now().UnixNano())
	cfg := func(args bool) string {
		return fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\ncall_log_args = %v\n", args) +
			promptsConfig(pdir, "") +
			tokenHarness("boss", dir, fmt.Sprintf("mcp_allow = [\"read\", \"write\"]\nenv_file = %q", filepath.Join(dir, "boss.env"))) +
			tokenHarness("reader", dir, "") +
			upstreamTable("up", "calls-"+filepath.Base(dir), fmt.Sprintf("env_file = %q", filepath.Join(dir, "up.env")))
	}
	f := newFleet(t, cfg(false))
	url := f.mcpURL()
	bossTok, readerTok := token(t, filepath.Join(dir, "boss.token")), token(t, filepath.Join(dir, "reader.token"))
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	bossRun, readerRun := f.runID("boss"), f.runID("reader")

	boss := f.mcpSession(bossTok, false, nil)
	reader := f.mcpSession(readerTok, false, nil)
	anon := f.mcpSession("", false, nil)
	op := httpSession(t, url, opTok)
	waitTool(t, f, anon, "up__echo")

	if res := callTool(t, boss, "harness_list", nil); res.IsError {
		t.Fatalf("boss list: %+v", res)
	}
	if res := callTool(t, boss, "harness_start", map[string]any{"name": "reader"}); res.IsError {
		t.Fatalf("boss start: %+v", res)
	}
	if code := errorCode(t, callTool(t, reader, "harness_stop", map[string]any{"name": "boss"})); code != "not_permitted" {
		t.Fatalf("reader stop: %q", code)
	}
	if got := text(t, callTool(t, anon, "up__echo", map[string]any{"text": argSecret})); got != argSecret {
		t.Fatalf("echo: %q", got)
	}
	if got := text(t, callTool(t, anon, "up__env", map[string]any{"key": "UP_TOKEN"})); got != "[masked]" {
		t.Fatalf("the upstream's env: %q, want it masked", got) // its own env_file value; the log must not have it either
	}
	if res := callTool(t, anon, "up__fail", map[string]any{"message": "nope"}); !res.IsError {
		t.Fatal("fail did not fail")
	}
	if code := errorCode(t, callTool(t, anon, "up__add_tool", map[string]any{"name": "x"})); code != "not_permitted" {
		t.Fatalf("an unattributed session called an upstream write tool: %q", code)
	}
	if _, err := anon.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"topic": "the call log"}}); err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, op, "harness_list", nil); res.IsError {
		t.Fatalf("operator list: %+v", res)
	}

	type who struct{ caller, harness, tool, class, outcome, transport string }
	want := []who{
		{"harness", "boss", "harness_list", "read", "ok", "socket"},
		{"harness", "boss", "harness_start", "write", "ok", "socket"},
		{"harness", "reader", "harness_stop", "write", "not_permitted", "socket"},
		{"unattributed", "", "up__echo", "read", "ok", "socket"},
		{"unattributed", "", "up__env", "read", "ok", "socket"},
		{"unattributed", "", "up__fail", "read", "tool_error", "socket"},
		{"unattributed", "", "up__add_tool", "write", "not_permitted", "socket"},
		{"unattributed", "", "review", "", "ok", "socket"},
		{"operator", "", "harness_list", "read", "ok", "http"},
	}
	all := f.calls("--limit", "100")
	// waitTool's tools/list calls are not calls; nothing else ran.
	if len(all.Calls) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(all.Calls), len(want), all.Calls)
	}
	sessions := map[string]string{}
	for i, r := range all.Calls {
		if got := (who{r.Caller, r.Harness, r.Tool, r.Class, r.Outcome, r.Transport}); got != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got, want[i])
		}
		if r.DurationMS <= 0 || r.DurationMS > 30000 || r.Time.IsZero() || r.Session == "" || r.ID == 0 {
			t.Errorf("record %d: %+v", i, r)
		}
		key := r.Caller + "/" + r.Harness
		if s, ok := sessions[key]; ok && s != r.Session {
			t.Errorf("%s changed session id within one session: %s, %s", key, s, r.Session)
		}
		sessions[key] = r.Session
		if r.Args != nil {
			t.Errorf("record %d kept arguments with call_log_args off: %s", i, r.Args)
		}
	}
	if len(sessions) != 4 {
		t.Errorf("sessions %v, want four", sessions)
	}
	if r := all.Calls[0]; r.RunID != bossRun {
		t.Errorf("boss's run %d, want %d", r.RunID, bossRun)
	}
	if r := all.Calls[2]; r.RunID != readerRun {
		t.Errorf("reader's run %d, want %d", r.RunID, readerRun)
	}
	if r := all.Calls[7]; r.Kind != "prompt" || r.RequestBytes != len("topic")+len("the call log") || r.ResponseBytes == 0 {
		t.Errorf("prompt record %+v", r)
	}
	if r := all.Calls[3]; r.RequestBytes != len(`{"text":"`+argSecret+`"}`) || r.ResponseBytes != len(argSecret) {
		t.Errorf("echo bytes: request %d response %d", r.RequestBytes, r.ResponseBytes)
	}

	// Filters.
	onlyBoss := f.calls("--harness", "boss")
	if len(onlyBoss.Calls) != 2 || onlyBoss.Calls[0].Tool != "harness_list" || onlyBoss.Calls[1].Tool != "harness_start" {
		t.Errorf("--harness boss: %+v", onlyBoss.Calls)
	}
	if got := f.calls("--tool", "up__*"); len(got.Calls) != 4 {
		t.Errorf("--tool up__*: %+v", got.Calls)
	}
	if got := f.calls("--tool", "harness_*", "--limit", "2"); len(got.Calls) != 2 || got.Calls[0].Tool != "harness_stop" || got.Calls[1].Caller != "operator" {
		t.Errorf("--tool harness_* --limit 2: %+v", got.Calls)
	}
	if got := f.calls("--since", "1h"); len(got.Calls) != len(want) {
		t.Errorf("--since 1h: %d records", len(got.Calls))
	}
	if got := f.calls("--since", time.Now().Add(time.Hour).Format(time.RFC3339)); len(got.Calls) != 0 {
		t.Errorf("--since the future: %+v", got.Calls)
	}
	if out, _, code := f.Run("calls", "--since", "yesterday", "--json"); code == 0 || !strings.Contains(out, "invalid_argument") {
		t.Errorf("--since yesterday: exit %d %s", code, out)
	}
	human := f.MustRun("calls", "--harness", "reader")
	if !strings.Contains(human, fmt.Sprintf("reader#%d", readerRun)) || !strings.Contains(human, "harness_stop") || !strings.Contains(human, "not_permitted") {
		t.Errorf("human calls: %q", human)
	}

	// Counters in mcp status and /metrics match the calls made.
	var st []struct {
		Key   string `json:"key"`
		Calls struct {
			Calls  uint64            `json:"calls"`
			Errors map[string]uint64 `json:"errors"`
			P50MS  float64           `json:"p50_ms"`
			P99MS  float64           `json:"p99_ms"`
			Tools  []struct {
				Tool  string `json:"tool"`
				Calls uint64 `json:"calls"`
			} `json:"tools"`
		} `json:"calls"`
	}
	f.MustJSON(&st, "mcp", "status")
	if len(st) != 1 || st[0].Calls.Calls != 4 || st[0].Calls.Errors["tool_error"] != 1 || st[0].Calls.Errors["not_permitted"] != 1 || len(st[0].Calls.Tools) != 4 ||
		st[0].Calls.P50MS <= 0 || st[0].Calls.P99MS < st[0].Calls.P50MS {
		t.Errorf("mcp status calls: %+v", st)
	}
	if code, _ := getMetrics(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d", code)
	}
	if code, _ := getMetrics(t, url, bossTok); code != http.StatusForbidden {
		t.Errorf("/metrics with a harness token: %d", code)
	}
	code, body := getMetrics(t, url, opTok)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	counted := map[string]float64{}
	for _, m := range mfs["harness_mcp_calls_total"].GetMetric() {
		if v := m.GetCounter().GetValue(); v > 0 {
			counted[metricLabel(m, "tool")+"/"+metricLabel(m, "outcome")] = v
		}
	}
	made := map[string]float64{}
	for _, r := range all.Calls {
		made[r.Tool+"/"+r.Outcome]++
	}
	if fmt.Sprint(counted) != fmt.Sprint(made) {
		t.Errorf("/metrics counts %v, calls made %v", counted, made)
	}
	if mfs["harness_mcp_call_duration_seconds"] == nil || mfs["harness_call_log_dropped_total"] == nil || mfs["go_goroutines"] == nil {
		t.Errorf("/metrics families: %v", keysOf(mfs))
	}

	// --follow prints a new call within a second.
	follow := exec.Command(harnessBin, "--socket", f.Socket, "calls", "--follow", "--json", "--tool", "harness_jobs")
	follow.Env = append(os.Environ(), "HARNESS_SOCKET=")
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { follow.Process.Kill(); follow.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Its first answer is empty (no harness_jobs yet). Whether or not its
	// long poll has started, the call must reach stdout within a second.
	callTool(t, boss, "harness_jobs", nil)
	made2 := time.Now()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("calls --follow ended")
		}
		var r callRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Tool != "harness_jobs" || r.Harness != "boss" {
			t.Fatalf("followed %q: %v", l, err)
		}
		if lag := time.Since(made2); lag > time.Second {
			t.Errorf("--follow printed the call %s after it was made", lag)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("calls --follow printed nothing")
	}
	follow.Process.Kill()
	follow.Wait()

	// call_log_args = true: the argument is kept (cut), and only it.
	f.WriteConfig(cfg(true))
	f.MustRun("reload")
	long := argSecret + strings.Repeat("z", 400)
	callTool(t, anon, "up__echo", map[string]any{"text": long})
	callTool(t, anon, "up__env", map[string]any{"key": "UP_TOKEN"})
	callTool(t, boss, "harness_describe", map[string]any{"name": "boss"})
	kept := f.calls("--limit", "3").Calls
	args := make([]string, len(kept))
	for i, r := range kept {
		var b bytes.Buffer
		if err := json.Compact(&b, r.Args); err != nil {
			t.Fatalf("args %q: %v", r.Args, err)
		}
		args[i] = b.String()
	}
	if len(kept) != 3 || !strings.Contains(args[0], argSecret) || strings.Contains(args[0], long) ||
		!strings.Contains(args[0], fmt.Sprintf("cut, %d bytes", len(long))) || args[1] != `{"key":"UP_TOKEN"}` || args[2] != `{"name":"boss"}` {
		t.Errorf("kept args: %q", args)
	}
	logText := f.callLogText()
	if strings.Count(logText, argSecret) != 1 {
		t.Errorf("the argument secret appears %d times in the log, want once (the record it was an argument of)", strings.Count(logText, argSecret))
	}
	for name, secret := range map[string]string{"env_file value": envSecret, "boss token": bossTok, "reader token": readerTok, "operator token": opTok} {
		if strings.Contains(logText, secret) {
			t.Errorf("the call log contains the %s", name)
		}
	}

	// The records survive a daemon restart; ids go on.
	before := f.calls("--limit", "1000")
	f.Stop()
	f.start()
	after := f.calls("--limit", "1000")
	if len(after.Calls) != len(before.Calls) || after.Calls[len(after.Calls)-1].ID != before.Calls[len(before.Calls)-1].ID {
		t.Fatalf("after a restart: %d records (last %d), before %d (last %d)", len(after.Calls), after.Calls[len(after.Calls)-1].ID,
			len(before.Calls), before.Calls[len(before.Calls)-1].ID)
	}
	anon2 := f.mcpSession("", false, nil)
	callTool(t, anon2, "harness_list", nil)
	if last := f.calls("--limit", "1").Calls; len(last) != 1 || last[0].ID != before.Calls[len(before.Calls)-1].ID+1 {
		t.Errorf("first record after the restart: %+v", last)
	}
}

func metricLabel(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCalls_ProjectNamesAndTheirUpstreams(t *testing.T) {
	tok := t.TempDir()
	f := newFleet(t, upstreamTable("shared", "calls-shared-"+filepath.Base(tok), ""))
	a := projectDir(t, "a", "alpha", tok, "agent")
	b := projectDir(t, "b", "beta", tok, "agent")
	f.mustRunIn(a, "up")
	f.mustRunIn(b, "up")
	sa := f.mcpSession(token(t, filepath.Join(tok, "a-agent.token")), false, nil)
	sb := f.mcpSession(token(t, filepath.Join(tok, "b-agent.token")), false, nil)
	waitTool(t, f, sa, "alpha__echo")
	waitTool(t, f, sa, "shared__echo")
	callTool(t, sa, "alpha__echo", map[string]any{"text": "a"})
	callTool(t, sa, "shared__echo", map[string]any{"text": "a"})
	callTool(t, sb, "harness_list", nil)

	// Inside project a, `agent` is a/agent.
	var got callsAnswer
	out := f.mustRunIn(filepath.Join(a, "sub"), "calls", "--harness", "agent", "--json")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(got.Calls) != 2 || got.Calls[0].Harness != "a/agent" || got.Calls[0].Tool != "alpha__echo" || got.Calls[1].Tool != "shared__echo" {
		t.Fatalf("calls --harness agent in project a: %+v", got.Calls)
	}
	if all := f.calls("--harness", "b/agent"); len(all.Calls) != 1 || all.Calls[0].Tool != "harness_list" {
		t.Errorf("calls --harness b/agent: %+v", all.Calls)
	}

	// Each upstream row counts the calls that reached it.
	var st []struct {
		Key     string `json:"key"`
		Project string `json:"project"`
		Calls   struct {
			Calls uint64 `json:"calls"`
		} `json:"calls"`
	}
	f.MustJSON(&st, "mcp", "status")
	rows := map[string]uint64{}
	for _, r := range st {
		rows[r.Project+"/"+r.Key] = r.Calls.Calls
	}
	if rows["a/alpha"] != 1 || rows["/shared"] != 1 || rows["b/beta"] != 0 || len(rows) != 3 {
		t.Errorf("mcp status calls by row: %v", rows)
	}
}
