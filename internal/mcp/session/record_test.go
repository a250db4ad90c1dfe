package session

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// fakeRecorder keeps what the sessions report.
type fakeRecorder struct {
	mu    sync.Mutex
	recs  []api.CallRecord
	keep  bool
	added chan struct{} // when set, signalled (without waiting) at each record
}

func (f *fakeRecorder) Record(r api.CallRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, r)
	if f.added != nil {
		select {
		case f.added <- struct{}{}:
		default:
		}
	}
}

// count is how many records of tool there are now.
func (f *fakeRecorder) count(tool string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.recs {
		if r.Tool == tool {
			n++
		}
	}
	return n
}

func (f *fakeRecorder) KeepArgs() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keep
}

func (f *fakeRecorder) take() []api.CallRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.recs
	f.recs = nil
	return out
}

// runAuth is the fake authority that also knows each token's run.
type runAuth struct {
	*mcptest.Auth
	runs map[string]uint64
}

func (a runAuth) RunOf(token string) (uint64, bool) {
	r, ok := a.runs[token]
	return r, ok
}

func recordingEnv(t *testing.T) (*env, *fakeRecorder) {
	t.Helper()
	e := newEnv(t)
	e.m.Close()
	e.auth.SetToken("tok-web", "p1/web")
	e.auth.SetProject("p1/web", "p1")
	e.auth.SetAllowed("p1/web", "read")
	e.m = NewManager(e.ops, runAuth{e.auth, map[string]uint64{"tok-web": 42}}, e.ups, func() Prompts { return e.prompts }, nil, "test")
	t.Cleanup(e.m.Close)
	rec := &fakeRecorder{}
	e.m.SetCallRecorder(rec)
	obj := json.RawMessage(`{"type":"object"}`)
	e.ups.tools["p1"] = []*mcp.Tool{
		{Name: "git__status", InputSchema: obj, Annotations: roHint},
		{Name: "git__push", InputSchema: obj},
		{Name: "git__log", InputSchema: obj, Annotations: roHint, OutputSchema: json.RawMessage(`{"type":"object","properties":{"lines":{"type":"array"}}}`)},
	}
	e.prompts.set(&mcp.Prompt{Name: "review", Arguments: []*mcp.PromptArgument{{Name: "target"}}})
	return e, rec
}

func TestRecord_EveryCallAndPromptWithItsCallerAndOutcome(t *testing.T) {
	e, rec := recordingEnv(t)
	cs, _ := e.connect(t, Identity{Harness: "p1/web", Token: "tok-web"})
	call(t, cs, "harness_list", `{}`)
	call(t, cs, "harness_stop", `{"name":"p1/web"}`) // read only: refused
	call(t, cs, "no_such_tool", `{}`)
	call(t, cs, "git__status", `{"path":"."}`)
	call(t, cs, "git__push", `{}`) // a write tool: refused by the broker's class
	call(t, cs, "git__nope", `{}`)
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"target": "main"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "missing"}); err == nil {
		t.Fatal("unknown prompt answered")
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // not a call: not recorded
		t.Fatal(err)
	}
	// A tool listed with an output schema gets its errors without the
	// structured body; the code still reaches the log.
	e.ups.mu.Lock()
	e.ups.err = errcode.Errorf(errcode.UpstreamUnavailable, "broker: upstream git: down")
	e.ups.mu.Unlock()
	if res := call(t, cs, "git__log", `{}`); !res.IsError || res.StructuredContent != nil {
		t.Fatalf("typed tool's error: %+v", res)
	}

	recs := rec.take()
	type row struct{ kind, tool, class, outcome string }
	want := []row{
		{"tool", "harness_list", "read", "ok"},
		{"tool", "harness_stop", "write", "not_permitted"},
		{"tool", "no_such_tool", "", "unknown_tool"},
		{"tool", "git__status", "read", "ok"},
		{"tool", "git__push", "write", "not_permitted"},
		{"tool", "git__nope", "", "unknown_tool"},
		{"prompt", "review", "", "ok"},
		{"prompt", "missing", "", "invalid_argument"},
		{"tool", "git__log", "read", "upstream_unavailable"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	session := recs[0].Session
	if !strings.HasPrefix(session, "sock-") {
		t.Errorf("socket session id %q", session)
	}
	for i, r := range recs {
		if got := (row{r.Kind, r.Tool, string(r.Class), r.Outcome}); got != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got, want[i])
		}
		if r.Caller != api.CallerHarness || r.Harness != "p1/web" || r.RunID != 42 || r.Project != "p1" ||
			r.Transport != api.TransportSocket || r.Session != session || r.Time.IsZero() || r.DurationMS <= 0 {
			t.Errorf("record %d: %+v", i, r)
		}
		if r.Args != nil {
			t.Errorf("record %d kept arguments while the log keeps none: %s", i, r.Args)
		}
	}
	if recs[3].RequestBytes != len(`{"path":"."}`) || recs[3].ResponseBytes != len(`upstream says {"path":"."}`) {
		t.Errorf("upstream call bytes: request %d response %d", recs[3].RequestBytes, recs[3].ResponseBytes)
	}
	if recs[6].RequestBytes != len("target")+len("main") || recs[6].ResponseBytes != len("review main") {
		t.Errorf("prompt bytes: request %d response %d", recs[6].RequestBytes, recs[6].ResponseBytes)
	}
}

func TestRecord_ArgumentsOnlyWhenKept(t *testing.T) {
	e, rec := recordingEnv(t)
	rec.keep = true
	cs, _ := e.connect(t, Identity{AllowControl: true})
	call(t, cs, "harness_logs", `{"name":"x","lines":3}`)
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"target": "t"}}); err != nil {
		t.Fatal(err)
	}
	recs := rec.take()
	if len(recs) != 2 || !jsonEqual(t, recs[0].Args, []byte(`{"name":"x","lines":3}`)) || !jsonEqual(t, recs[1].Args, []byte(`{"target":"t"}`)) {
		t.Fatalf("records %+v", recs)
	}
	if recs[0].Caller != api.CallerUnattributed || recs[0].Harness != "" || recs[0].RunID != 0 {
		t.Errorf("unattributed caller: %+v", recs[0])
	}
}

func TestRecord_HTTPSessionsAndTheOperator(t *testing.T) {
	e, rec := recordingEnv(t)
	srv := e.m.NewServer(Identity{Operator: true})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res := call(t, cs, "harness_restart", `{"name":"x"}`); errCode(t, res) != errcode.NotPermitted {
		t.Fatal("operator without write restarted")
	}
	recs := rec.take()
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	if r.Caller != api.CallerOperator || r.Transport != api.TransportHTTP || r.Session != cs.ID() || r.Session == "" ||
		r.Outcome != "not_permitted" || r.Class != api.Write {
		t.Fatalf("operator record %+v (client session %q)", r, cs.ID())
	}
}
