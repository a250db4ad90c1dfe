package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/telemetry/otlptest"
	"github.com/harness-dev/harness/internal/traceparent"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The OTLP exporters' HTTP clients keep idle connections.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// fakeRuns answers Wait with a finished run record.
type fakeRuns map[uint64]api.Run

func (f fakeRuns) Wait(_ context.Context, id uint64) (api.Run, error) { return f[id], nil }

func newTel(t *testing.T, url string, runs RunSource, timeout time.Duration) *Telemetry {
	t.Helper()
	tel, err := New(Options{Endpoint: url, ServiceName: "harness-test", Version: "v-test", Runs: runs,
		ExportTimeout: timeout, MetricInterval: time.Hour, Headers: map[string]string{"X-Collector-Key": "k-123"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Close(ctx)
	})
	return tel
}

func flush(t *testing.T, tel *Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestScenario_RunTurnAndToolCallFormOneTrace(t *testing.T) {
	rcv := otlptest.New(t)
	end := time.Unix(1700000100, 0)
	runs := fakeRuns{7: {ID: 7, Outcome: api.RunOK, EndedAt: &end, RunAgent: api.RunAgent{Model: "claude-x", Tokens: api.Tokens{Input: 120, Output: 30}, CostUSD: 0.25}}}
	tel := newTel(t, rcv.URL, runs, 5*time.Second)
	t0 := time.Unix(1700000000, 0)
	tel.Observe(api.Event{Kind: api.EventState, Unit: "fixer", State: "running", RunID: 7, Time: t0})
	tel.Observe(api.Event{Kind: api.EventAgent, Unit: "fixer", RunID: 7, Time: t0.Add(time.Second),
		Agent: &api.AgentView{Agent: "claude-code", AgentState: api.AgentWorking}})
	flush(t, tel) // the turn is open before the call asks for its parent

	parent, ok := tel.CallParent("fixer")
	if !ok {
		t.Fatal("no parent for a harness in a turn")
	}
	own := traceparent.Child(parent)
	tel.Record(api.CallRecord{Time: t0.Add(2 * time.Second), Kind: api.CallTool, Tool: "files__read", Harness: "fixer",
		Caller: api.CallerHarness, Transport: api.TransportSocket, Class: api.Read, Outcome: api.OutcomeOK,
		DurationMS: 12, RequestBytes: 20, ResponseBytes: 300, Trace: own.String(), TraceParent: parent.String()})
	tel.Observe(api.Event{Kind: api.EventAgent, Unit: "fixer", RunID: 7, Time: t0.Add(3 * time.Second),
		Agent: &api.AgentView{Agent: "claude-code", AgentState: api.AgentWaiting, WaitingFor: api.WaitingPermission}})
	tel.Observe(api.Event{Kind: api.EventAgent, Unit: "fixer", RunID: 7, Time: t0.Add(4 * time.Second),
		Agent: &api.AgentView{Agent: "claude-code", AgentState: api.AgentReady}})
	code := 0
	tel.Observe(api.Event{Kind: api.EventExit, Unit: "fixer", State: "stopped", RunID: 7, ExitCode: &code, Time: t0.Add(5 * time.Second)})
	flush(t, tel)

	run, turn, call := rcv.Span(t, "run fixer"), rcv.Span(t, "turn fixer"), rcv.Span(t, "tools/call files__read")
	if len(run.ParentSpanId) != 0 {
		t.Errorf("run span has a parent %x: it is the root of its trace", run.ParentSpanId)
	}
	if otlptest.HexID(turn.TraceId) != otlptest.HexID(run.TraceId) || otlptest.HexID(turn.ParentSpanId) != otlptest.HexID(run.SpanId) {
		t.Errorf("turn span not a child of the run: %x/%x vs %x/%x", turn.TraceId, turn.ParentSpanId, run.TraceId, run.SpanId)
	}
	if otlptest.HexID(call.TraceId) != otlptest.HexID(run.TraceId) || otlptest.HexID(call.ParentSpanId) != otlptest.HexID(turn.SpanId) {
		t.Errorf("call span not a child of the turn")
	}
	if otlptest.HexID(call.SpanId) != otlptest.HexID(own.SpanID[:]) {
		t.Errorf("call span id %x, want the one sent upstream %x", call.SpanId, own.SpanID)
	}
	if got := time.Duration(call.EndTimeUnixNano - call.StartTimeUnixNano); got != 12*time.Millisecond {
		t.Errorf("call span lasts %v, want the call's 12ms", got)
	}
	for k, want := range map[string]string{attrUpstream: "files", attrTool: "read", attrCallOutcome: "ok", attrClass: "read", attrHarness: "fixer"} {
		if v := otlptest.Attr(call, k); v.GetStringValue() != want {
			t.Errorf("call %s = %v, want %q", k, v, want)
		}
	}
	if otlptest.Attr(call, attrResponseBytes).GetIntValue() != 300 {
		t.Errorf("call response bytes = %v", otlptest.Attr(call, attrResponseBytes))
	}
	if otlptest.Attr(run, attrOutcome).GetStringValue() != "ok" || otlptest.Attr(run, attrModel).GetStringValue() != "claude-x" ||
		otlptest.Attr(run, attrTokensIn).GetIntValue() != 120 || otlptest.Attr(run, attrAgent).GetStringValue() != "claude-code" {
		t.Errorf("run attributes = %v", run.Attributes)
	}
	if run.EndTimeUnixNano != uint64(end.UnixNano()) {
		t.Errorf("run ends at %d, want its record's end %d", run.EndTimeUnixNano, end.UnixNano())
	}
	if len(turn.Events) != 1 || turn.Events[0].Name != "waiting" {
		t.Errorf("turn events = %v, want one waiting", turn.Events)
	}
	if otlptest.Attr(turn, attrAgentState).GetStringValue() != "ready" {
		t.Errorf("turn ended in %v, want ready", otlptest.Attr(turn, attrAgentState))
	}
	if !slices.Contains(rcv.Services(), "harness-test") || rcv.Headers()[0].Get("X-Collector-Key") != "k-123" {
		t.Errorf("service %v, headers %v", rcv.Services(), rcv.Headers()[0])
	}
	if st := tel.Stats(); st.SpansExported != 3 || st.SpansDropped != 0 || st.SpansFailed != 0 {
		t.Errorf("stats = %+v, want 3 exported", st)
	}
	if _, ok := tel.CallParent("fixer"); ok {
		t.Error("a harness whose run ended still gives its calls a parent")
	}
}

func TestScenario_CallersTraceparentIsContinued(t *testing.T) {
	rcv := otlptest.New(t)
	tel := newTel(t, rcv.URL, nil, 5*time.Second)
	caller, _ := traceparent.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	own := traceparent.Child(caller)
	tel.Record(api.CallRecord{Time: time.Now(), Kind: api.CallTool, Tool: "harness_list", Caller: api.CallerOperator,
		Outcome: "permission_denied", Trace: own.String(), TraceParent: caller.String()})
	flush(t, tel)
	s := rcv.Span(t, "tools/call harness_list")
	if otlptest.HexID(s.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || otlptest.HexID(s.ParentSpanId) != "00f067aa0ba902b7" {
		t.Fatalf("span %x parent %x: the caller's trace is not continued", s.TraceId, s.ParentSpanId)
	}
	if otlptest.Attr(s, attrUpstream).GetStringValue() != FacadeUpstream || s.Status.GetCode() != 2 {
		t.Fatalf("facade call: upstream %v status %v", otlptest.Attr(s, attrUpstream), s.Status)
	}
}

// A collector that never answers: every export waits out its timeout on
// the exporting goroutine, the queue fills and drops, and the callers —
// the daemon's event fan-out and every MCP call — never wait.
func TestScenario_HangingCollectorSlowsNothing(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	tel := newTel(t, hang.URL, nil, 2*time.Second)
	const n = 20000
	var worst time.Duration
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		tel.Record(api.CallRecord{Time: t0, Kind: api.CallTool, Tool: "a__b", Outcome: "ok", DurationMS: 1})
		if i%2 == 0 {
			tel.Observe(api.Event{Kind: api.EventState, Unit: "u", State: "running", RunID: uint64(i + 1), Time: t0})
		}
		worst = max(worst, time.Since(t0))
	}
	total := time.Since(start)
	// A blocking hand-over would wait out the 2 s export timeout once the
	// queues filled; a loaded machine's scheduling is far below that.
	if worst > time.Second || total > 5*time.Second {
		t.Errorf("Record/Observe: worst %v, all %v with a hanging collector", worst, total)
	}
	t.Logf("%d records and %d events in %v (worst %v)", n, n/2, total, worst)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := tel.Stats()
		if st.SpansDropped+st.EventsDropped > 0 && st.SpansFailed > 0 {
			t.Logf("stats: %+v", st)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing counted as dropped and failed: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestScenario_RefusingCollectorIsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	var errs []error
	tel, err := New(Options{Endpoint: srv.URL, ExportTimeout: time.Second, MetricInterval: time.Hour,
		OnError: func(err error) { errs = append(errs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	tel.Record(api.CallRecord{Time: time.Now(), Kind: api.CallTool, Tool: "a__b", Outcome: "ok"})
	flush(t, tel)
	if st := tel.Stats(); st.SpansFailed != 1 || st.SpansExported != 0 {
		t.Fatalf("stats = %+v, want 1 failed", st)
	}
	if len(errs) != 1 {
		t.Fatalf("OnError heard %d errors, want 1", len(errs))
	}
}

func TestNew_RefusesAnEndpointThatIsNoURL(t *testing.T) {
	if _, err := New(Options{Endpoint: "127.0.0.1:4318"}); err == nil {
		t.Fatal("New took an endpoint without a scheme")
	}
}

// TestScenario_ADelegatedTurnLinksToTheCallThatDelegated: the turn a
// delegation starts stays in its run's trace and carries a link to the
// delegating call's span, in the caller's trace; the turn after it does
// not.
func TestScenario_ADelegatedTurnLinksToTheCallThatDelegated(t *testing.T) {
	rcv := otlptest.New(t)
	tel := newTel(t, rcv.URL, fakeRuns{}, 5*time.Second)
	t0 := time.Unix(1700000000, 0)
	caller, _ := traceparent.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	tel.Observe(api.Event{Kind: api.EventState, Unit: "dev", State: "running", RunID: 3, Time: t0})
	tel.LinkNextTurn("dev", caller)
	for i, st := range []api.AgentState{api.AgentWorking, api.AgentReady, api.AgentWorking, api.AgentReady} {
		tel.Observe(api.Event{Kind: api.EventAgent, Unit: "dev", RunID: 3, Time: t0.Add(time.Duration(i+1) * time.Second),
			Agent: &api.AgentView{Agent: "claude-code", AgentState: st}})
	}
	flush(t, tel)
	turns := rcv.Spans("turn dev")
	if len(turns) != 2 {
		t.Fatalf("%d turn spans, want 2", len(turns))
	}
	first, second := turns[0], turns[1]
	if first.StartTimeUnixNano > second.StartTimeUnixNano {
		first, second = second, first
	}
	if len(first.Links) != 1 || otlptest.HexID(first.Links[0].TraceId) != otlptest.HexID(caller.TraceID[:]) ||
		otlptest.HexID(first.Links[0].SpanId) != otlptest.HexID(caller.SpanID[:]) {
		t.Fatalf("the delegated turn's links = %v, want the caller's span", first.Links)
	}
	if len(second.Links) != 0 {
		t.Fatalf("the next turn links %v", second.Links)
	}
}
