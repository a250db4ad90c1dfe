package modelapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// events posts body to path and returns the SSE data payloads (and event
// names) it answers with.
func events(t *testing.T, s *Server, path, body string) (names []string, data []map[string]any, status int) {
	t.Helper()
	resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return nil, []map[string]any{m}, resp.StatusCode
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if n, ok := strings.CutPrefix(l, "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data %q: %v", d, err)
			}
			data = append(data, m)
		}
	}
	return names, data, resp.StatusCode
}

const withTools = `"tools":[{"name":"Bash"}],"stream":true`

func TestScenario_AnthropicStreamsTextThenAToolCall(t *testing.T) {
	s := start(t)
	s.Script(Turn{Text: "hello there", Chunks: 3}, Turn{Shell: "touch x"})
	names, data, _ := events(t, s, "/v1/messages?beta=true", `{"model":"claude-x",`+withTools+`}`)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", names, want)
	}
	var text string
	for _, d := range data {
		if d["type"] == "content_block_delta" {
			text += d["delta"].(map[string]any)["text"].(string)
		}
	}
	if text != "hello there" || data[0]["message"].(map[string]any)["model"] != "claude-x" {
		t.Errorf("text %q, start %v", text, data[0])
	}
	_, data, _ = events(t, s, "/v1/messages", `{"model":"claude-x",`+withTools+`}`)
	start := data[1]["content_block"].(map[string]any)
	if start["type"] != "tool_use" || start["name"] != "Bash" {
		t.Errorf("tool block %v", start)
	}
	if d := data[2]["delta"].(map[string]any); d["type"] != "input_json_delta" || !strings.Contains(d["partial_json"].(string), `"touch x"`) {
		t.Errorf("tool delta %v", d)
	}
	if md := data[len(data)-2]["delta"].(map[string]any); md["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", md)
	}
	// A side call (no tools) takes no turn.
	_, data, _ = events(t, s, "/v1/messages", `{"model":"haiku","stream":true}`)
	if got := data[2]["delta"].(map[string]any)["text"]; got != DefaultText {
		t.Errorf("side call answered %v", got)
	}
	if s.Used() != 2 || len(s.Requests()) != 3 || len(s.MainRequests()) != 2 {
		t.Errorf("used %d, requests %d, main %d", s.Used(), len(s.Requests()), len(s.MainRequests()))
	}
	if n, _ := s.Requests()[0].ToolName("Bash"); n != "Bash" {
		t.Errorf("ToolName = %q", n)
	}
}

func TestScenario_UsageLimitsInEachProvidersShape(t *testing.T) {
	s := start(t)
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	lim := Turn{Error: &Error{Status: 429, UsageLimit: true, ResetAt: reset}}
	s.Script(lim, lim, lim)
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{`+withTools+`}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("anthropic-ratelimit-unified-status") != "rejected" ||
		resp.Header.Get("anthropic-ratelimit-unified-reset") == "" || resp.Header.Get("x-should-retry") != "false" {
		t.Errorf("anthropic 429: %d %v", resp.StatusCode, resp.Header)
	}
	_, data, status := events(t, s, "/v1/responses", `{"model":"gpt-5",`+withTools+`}`)
	e := data[0]["error"].(map[string]any)
	if status != 429 || e["type"] != "usage_limit_reached" || int64(e["resets_at"].(float64)) != reset.Unix() {
		t.Errorf("openai 429: %d %v", status, e)
	}
	_, data, status = events(t, s, "/v1beta/models/gemini-pro:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`)
	e = data[0]["error"].(map[string]any)
	if status != 429 || e["status"] != "RESOURCE_EXHAUSTED" || len(e["details"].([]any)) != 2 {
		t.Errorf("gemini 429: %d %v", status, e)
	}
}

func TestScenario_OpenAIAndGeminiStreams(t *testing.T) {
	s := start(t)
	s.Script(Turn{Text: "hi", Shell: "touch y", Usage: Usage{Input: 7, Output: 3, CacheRead: 2}}, Turn{Text: "abc", Chunks: 3})
	names, data, _ := events(t, s, "/v1/responses", `{"model":"gpt-5",`+withTools+`}`)
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("openai events %v", names)
	}
	done := data[len(data)-1]["response"].(map[string]any)
	out := done["output"].([]any)
	fc := out[1].(map[string]any)
	if fc["type"] != "function_call" || fc["name"] != "exec_command" || !strings.Contains(fc["arguments"].(string), "require_escalated") {
		t.Errorf("function call %v", fc)
	}
	if u := done["usage"].(map[string]any); u["output_tokens"] != 3.0 || u["input_tokens"] != 9.0 {
		t.Errorf("usage %v", u)
	}
	_, data, _ = events(t, s, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"x"}]}]}`)
	var text string
	for _, d := range data {
		c := d["candidates"].([]any)[0].(map[string]any)
		text += c["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
	}
	if text != "abc" || len(data) != 3 || data[0]["modelVersion"] != "gemini-2.5-pro" {
		t.Errorf("gemini stream %v", data)
	}
	// The router's JSON call gets a value of its schema.
	resp, err := http.Post(s.URL+"/v1beta/models/flash-lite:generateContent", "application/json", strings.NewReader(
		`{"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"reasoning":{"type":"string"},"model_choice":{"type":"string","enum":["flash","pro"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	txt := r["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
	var v map[string]any
	if err := json.Unmarshal([]byte(txt), &v); err != nil || v["model_choice"] != "flash" || v["reasoning"] == nil {
		t.Errorf("router answer %q: %v", txt, err)
	}
}

func TestScenario_AHeldStreamWaitsAndRequestsAreAwaitable(t *testing.T) {
	s := start(t)
	hold := make(chan struct{})
	s.Script(Turn{Text: "slow answer", Chunks: 2, Hold: hold})
	got := make(chan int, 1)
	go func() {
		_, data, _ := events(t, s, "/v1/messages", `{`+withTools+`}`)
		got <- len(data)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := s.WaitRequest(ctx, 0, func(r Request) bool { return r.Main }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
		t.Fatal("the held stream ended before it was released")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	if n := <-got; n != 7 {
		t.Errorf("%d events after release", n)
	}
}

// A turn with Until answers every main request until it is closed; then
// the script goes on.
func TestScenario_ATurnRepeatsUntilItIsClosed(t *testing.T) {
	s := start(t)
	limit := make(chan struct{})
	s.Script(Turn{Error: &Error{Status: 429, UsageLimit: true}, Until: limit}, Turn{Text: "after"})
	body := `{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`
	post := func() int {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		if code := post(); code != 429 {
			t.Fatalf("a retry got %d, want 429", code)
		}
	}
	close(limit)
	if code := post(); code != 200 {
		t.Errorf("after the close: %d", code)
	}
	if rs := s.MainRequests(); len(rs) != 4 || rs[3].Turn != 1 {
		t.Errorf("requests %+v", rs)
	}
	// Chat Completions names its tools in function.name.
	if n, err := s.Requests()[0].ToolName("bash"); n != "bash" {
		t.Errorf("ToolName = %q, %v", n, err)
	}
}
