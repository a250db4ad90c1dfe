package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// fastSecret is an env_file value the daemon masks in process upstreams'
// results.
const fastSecret = "s3cr3t-value-0042"

// fastEnv is a Manager (fast path on or off) over a real broker with one
// process-like upstream "up" (a go-sdk server on pipes, as the broker sees
// a child's stdio), a call recorder, and the channels the upstream's tools
// report on.
type fastEnv struct {
	*env
	b         *broker.Broker
	rec       *fakeRecorder
	started   chan struct{} // a "hang" call reached the upstream
	cancelled chan string   // a "hang" call's ctx ended upstream: its reason
	gate      *gate         // shut: the upstream stops reading its stdin
}

// gate holds readers back while it is shut.
type gate struct {
	mu   sync.Mutex
	shut bool
	cond *sync.Cond
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) close() { g.mu.Lock(); g.shut = true; g.mu.Unlock() }

func (g *gate) open() { g.mu.Lock(); g.shut = false; g.cond.Broadcast(); g.mu.Unlock() }

func (g *gate) pass() {
	g.mu.Lock()
	for g.shut {
		g.cond.Wait()
	}
	g.mu.Unlock()
}

// gatedReader reads r once its gate lets it.
type gatedReader struct {
	r io.ReadCloser
	g *gate
}

func (r gatedReader) Read(p []byte) (int, error) { r.g.pass(); return r.r.Read(p) }

func (r gatedReader) Close() error { return r.r.Close() }

func newFastEnv(t *testing.T, fast bool) *fastEnv {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A bound above any test's calls in flight: the calls past it would
	// wait for a slot on goroutines of their own, out of the path tested.
	b := broker.New(logger, broker.Options{Mask: mask.New(fastSecret).String, MaxInFlight: 1024})
	b.Configure(map[string]broker.Upstream{"up": {Key: "up", MaxResult: 256 << 10}})
	e := &env{ops: mcptest.NewOps(), auth: mcptest.NewAuth(), prompts: &fakePrompts{}}
	e.m = NewManager(e.ops, e.auth, b, func() Prompts { return e.prompts }, logger, "test")
	e.m.SetFastPath(fast)
	rec := &fakeRecorder{keep: true, added: make(chan struct{}, 1)}
	e.m.SetCallRecorder(rec)
	t.Cleanup(e.m.Close)
	t.Cleanup(b.Close)
	fe := &fastEnv{env: e, b: b, rec: rec, started: make(chan struct{}, 4), cancelled: make(chan string, 4)}
	fe.serveUpstream(t)
	return fe
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// serveUpstream runs the upstream's go-sdk server on pipes and waits for
// the broker to list it.
func (fe *fastEnv) serveUpstream(t *testing.T) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "0"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	obj := map[string]any{"type": "object"}
	add := func(tool *mcp.Tool, h mcp.ToolHandler) {
		if tool.InputSchema == nil {
			tool.InputSchema = obj
		}
		s.AddTool(tool, h)
	}
	add(&mcp.Tool{Name: "echo", Annotations: ro}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return textResult(a.Text), nil
	})
	// A typed input schema and no annotations: the bench's second tool.
	add(&mcp.Tool{Name: "typed", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"twice": map[string]any{"type": "integer"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			res := textResult("twice")
			res.StructuredContent = map[string]any{"twice": 2 * a.N}
			return res, nil
		})
	add(&mcp.Tool{Name: "secret", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("TOKEN=" + fastSecret + " and <more> & more"), nil
	})
	add(&mcp.Tool{Name: "plainsecret", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("line one\nTOKEN=" + fastSecret), nil
	})
	add(&mcp.Tool{Name: "fail", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := textResult("it broke")
		res.IsError = true
		return res, nil
	})
	add(&mcp.Tool{Name: "boom", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such thing"}
	})
	add(&mcp.Tool{Name: "empty", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	add(&mcp.Tool{Name: "big", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("x", 300<<10)), nil // over max_result_bytes
	})
	// Under the bound, over what the upstream's reader finishes itself.
	add(&mcp.Tool{Name: "large", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("l", 100<<10) + " TOKEN=" + fastSecret), nil
	})
	add(&mcp.Tool{Name: "hang", Annotations: ro}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fe.started <- struct{}{}
		<-ctx.Done()
		fe.cancelled <- context.Cause(ctx).Error()
		return nil, ctx.Err()
	})
	add(&mcp.Tool{Name: "progress", Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "half"})
		}
		return textResult("done"), nil
	})
	add(&mcp.Tool{Name: "kb", Annotations: ro}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("k", 3000)), nil
	})
	// OS pipes, as a child's stdio are: the broker's writes to them and
	// the session's to its socket are the daemon's own, never waiting
	// (jsonl send). The upstream reads through a gate a test can shut.
	upIn, brokerOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	brokerIn, upOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fe.gate = newGate()
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: gatedReader{upIn, fe.gate}, Writer: upOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fe.gate.open()
		fe.b.Close()
		upOut.Close()
		_ = ss.Wait()
		upIn.Close()
	})
	fe.b.Serve(context.Background(), api.UpstreamRun{Unit: "up", Run: 1, Link: api.Pipes{Stdin: brokerOut, Stdout: brokerIn}})
	deadline := time.After(waitFor)
	for {
		ch := fe.b.Changed()
		if slices.ContainsFunc(fe.b.Status(), func(s broker.Status) bool { return s.Unit == "up" && s.Connected }) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("timed out waiting for the upstream to connect")
		}
	}
}

// fastCase is one call of the scenario and what its answer must say.
type fastCase struct {
	name, args string
	fast       bool   // taken by the fast path (when it is on)
	says       string // in the answer's JSON
}

var fastCases = []fastCase{
	{"up__echo", `{"text":"hello"}`, true, `"text":"hello"`},
	{"up__echo", `{"text":"a \"quoted\" \\ line\nand <html> & ünïcode"}`, true, `a \"quoted\" \\ line\nand \u003chtml\u003e \u0026 ünïcode`},
	{"up__typed", `{"n":21}`, true, `"structuredContent":{"twice":42}`},
	{"up__secret", `{}`, true, `TOKEN=[masked] and \u003cmore\u003e \u0026 more`},
	{"up__plainsecret", `{}`, true, `line one\nTOKEN=[masked]`},
	{"up__fail", `{}`, true, `upstream up: it broke`},
	{"up__boom", `{}`, true, `no such thing`},
	{"up__empty", `{}`, true, `"content":[]`},
	{"up__big", `{}`, true, `exceeds the limit of 262144 bytes (max_result_bytes of [mcp.up])`},
	{"up__large", `{}`, true, `lll TOKEN=[masked]`},
	{"up__echo", `{"text":"after the big one"}`, true, `after the big one`},
	{"up__nosuch", `{}`, false, `unknown_tool`},
	{"nope__echo", `{}`, false, `unknown_namespace`},
	{"harness_list", `{}`, false, ``},
}

var answerSize = regexp.MustCompile(`the answer of \d+ bytes`)

// TestScenario_TheFastPathAnswersAsTheGoSDKPathDoes runs the same calls
// through a session with the tools/call fast path on and off: every answer
// and every call log row is the same, secrets are masked either way
// (escaped text included), max_result_bytes refuses an answer either way
// and the session goes on, and with the fast path on the calls to listed
// upstream tools were the ones forwarded as bytes.
func TestScenario_TheFastPathAnswersAsTheGoSDKPathDoes(t *testing.T) {
	answers := map[bool][]string{}
	rows := map[bool][]api.CallRecord{}
	for _, fast := range []bool{false, true} {
		fe := newFastEnv(t, fast)
		fe.auth.SetAllowed("web", "read", "up:write")
		cs, _ := fe.connect(t, Identity{Harness: "web"})
		// A call the moment the session is set up may still go the go-sdk
		// way (answered the same): one first, not counted.
		call(t, cs, "up__echo", `{"text":"first"}`)
		before := fe.b.FastCalls()
		wantFast := 0
		for _, c := range fastCases {
			res := call(t, cs, c.name, c.args)
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), c.says) {
				t.Errorf("fast=%v %s: answer %s does not say %s", fast, c.name, b, c.says)
			}
			if strings.Contains(string(b), fastSecret) {
				t.Errorf("fast=%v %s: answer %s carries the secret", fast, c.name, b)
			}
			// The refused answer's size counts its id, which differs.
			answers[fast] = append(answers[fast], answerSize.ReplaceAllString(string(b), "the answer of N bytes"))
			if c.fast {
				wantFast++
			}
		}
		got := int(fe.b.FastCalls() - before)
		if !fast {
			wantFast = 0
		}
		if got != wantFast {
			t.Errorf("fast=%v: %d calls forwarded as bytes, want %d", fast, got, wantFast)
		}
		for _, r := range fe.rec.take() {
			r.Time, r.DurationMS, r.Session = time.Time{}, 0, ""
			rows[fast] = append(rows[fast], r)
		}
	}
	for i, c := range fastCases {
		if answers[false][i] != answers[true][i] {
			t.Errorf("%s %s: the go-sdk path answered\n%s\nthe fast path\n%s", c.name, c.args, answers[false][i], answers[true][i])
		}
	}
	if want := len(fastCases) + 1; len(rows[false]) != want || len(rows[true]) != want { // the first call's too
		t.Fatalf("call log rows: %d (go-sdk path) and %d (fast path), want %d each", len(rows[false]), len(rows[true]), want)
	}
	for i := range rows[false] {
		a, _ := json.Marshal(rows[false][i])
		b, _ := json.Marshal(rows[true][i])
		if string(a) != string(b) {
			t.Errorf("call log row %d: go-sdk path %s, fast path %s", i, a, b)
		}
	}
}

// TestScenario_AFastCallCancelledByItsClientIsCancelledUpstream: the
// client's notifications/cancelled ends the call upstream (the upstream
// hears its own notifications/cancelled), no answer follows, the call log
// has the call, and the session goes on.
func TestScenario_AFastCallCancelledByItsClientIsCancelledUpstream(t *testing.T) {
	fe := newFastEnv(t, true)
	fe.auth.SetAllowed("web", "read")
	cs, _ := fe.connect(t, Identity{Harness: "web"})
	before := fe.b.FastCalls()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__hang", Arguments: map[string]any{}})
		done <- err
	}()
	wait(t, fe.started, "the call to reach the upstream")
	cancel()
	if err := wait(t, done, "the cancelled call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	reason := wait(t, fe.cancelled, "the upstream to see the cancellation")
	if !strings.Contains(reason, "context canceled") {
		t.Errorf("upstream's cancellation reason %q", reason)
	}
	if got := fe.b.FastCalls() - before; got != 1 {
		t.Errorf("%d calls forwarded as bytes, want 1", got)
	}
	if res := call(t, cs, "up__echo", `{"text":"still here"}`); !strings.Contains(text(t, res), "still here") {
		t.Errorf("after the cancellation: %s", text(t, res))
	}
	deadline := time.Now().Add(waitFor)
	for {
		recs := fe.rec.take()
		if i := slices.IndexFunc(recs, func(r api.CallRecord) bool { return r.Tool == "up__hang" }); i >= 0 {
			if recs[i].Outcome == api.OutcomeOK {
				t.Errorf("cancelled call recorded as %q", recs[i].Outcome)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call has no call log row")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestScenario_ACallWithAProgressTokenKeepsTheGoSDKPath: progress reaches
// the client under its own token, through the go-sdk path; calls without
// a token, other _meta or not, take the fast path.
func TestScenario_ACallWithAProgressTokenKeepsTheGoSDKPath(t *testing.T) {
	fe := newFastEnv(t, true)
	fe.auth.SetAllowed("web", "read")
	cs, n := fe.connect(t, Identity{Harness: "web"})
	before := fe.b.FastCalls()
	params := &mcp.CallToolParams{Name: "up__progress", Arguments: map[string]any{}}
	params.SetProgressToken("mine")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || text(t, res) != "done" {
		t.Fatalf("progress call: %v %v", res, err)
	}
	if p := wait(t, n.progress, "progress"); p.ProgressToken != "mine" || p.Message != "half" {
		t.Errorf("progress %+v", p)
	}
	if got := fe.b.FastCalls() - before; got != 0 {
		t.Errorf("%d calls forwarded as bytes, want 0 (a progress token keeps the go-sdk path)", got)
	}
	if res := call(t, cs, "up__progress", `{}`); text(t, res) != "done" {
		t.Errorf("progress without a token: %s", text(t, res))
	}
	// Other _meta (Claude Code sends its tool use id) keeps the fast path.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__progress", Arguments: map[string]any{},
		Meta: mcp.Meta{"claudecode/toolUseId": "toolu_1"}})
	if err != nil || text(t, res) != "done" {
		t.Fatalf("call with _meta: %v %v", res, err)
	}
	if got := fe.b.FastCalls() - before; got != 2 {
		t.Errorf("%d calls forwarded as bytes, want 2", got)
	}
}
