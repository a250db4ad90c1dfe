//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/telemetry/otlptest"
	"github.com/harness-dev/harness/internal/traceparent"
)

// TestScenario_TracesReachTheCollectorAndTheUpstream: with [telemetry]
// pointing at an OTLP/HTTP collector, the demo agent's run is a trace
// with its turns as children (one waited for a permission); an MCP call
// whose caller sent a traceparent is a span in the caller's trace, and
// the upstream receives that span's own traceparent; a call without one
// joins the calling harness's run. Metrics arrive; the collector's bearer
// token is in no file the daemon wrote.
func TestScenario_TracesReachTheCollectorAndTheUpstream(t *testing.T) {
	rcv := otlptest.New(t)
	const secret = "otlp-s3cret-77c1"
	work, tokdir := t.TempDir(), t.TempDir()
	f := newFleet(t, fmt.Sprintf(`
[telemetry]
otlp_endpoint = %q
otlp_headers = { Authorization = "Bearer ${OTLP_TOKEN}" }
env = { OTLP_TOKEN = %q }
service_name = "harness-e2e"
metric_interval_s = 1
%s%s%s`, rcv.URL, secret, demoHarness(work, "Edit the README"), tokenHarness("caller", tokdir, ""), upstreamTable("up", "tel-up-"+filepath.Base(tokdir), "")))

	f.waitAgent("demo", "waiting")
	f.MustRun("answer", "demo", "Yes")
	f.waitAgent("demo", "ready")

	s := f.mcpSession(token(t, filepath.Join(tokdir, "caller.token")), false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const callerTP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	seen := traceSeen(t, s, ctx, mcp.Meta{"traceparent": callerTP})
	plain := traceSeen(t, s, ctx, nil)

	f.MustRun("stop", "demo")
	f.MustRun("stop", "caller") // a run's span is sent when the run ends
	f.WaitFor("the runs' spans and the calls' spans", 30*time.Second, func() bool {
		return len(rcv.Spans("run demo")) == 1 && len(rcv.Spans("run caller")) == 1 && len(rcv.Spans("tools/call up__trace")) == 2
	})

	run := rcv.Span(t, "run demo")
	turns := rcv.Spans("turn demo")
	if len(turns) == 0 {
		t.Fatal("no turn span for the demo agent")
	}
	waited := false
	for _, tr := range turns {
		if otlptest.HexID(tr.TraceId) != otlptest.HexID(run.TraceId) || otlptest.HexID(tr.ParentSpanId) != otlptest.HexID(run.SpanId) {
			t.Errorf("turn %x is not a child of run %x", tr.SpanId, run.SpanId)
		}
		for _, ev := range tr.Events {
			waited = waited || ev.Name == "waiting"
		}
	}
	if !waited {
		t.Error("no turn has the waiting event of the permission prompt")
	}
	if otlptest.Attr(run, "harness.agent").GetStringValue() != "demo" || otlptest.Attr(run, "harness.outcome").GetStringValue() == "" {
		t.Errorf("run attributes: %v", run.Attributes)
	}

	calls := rcv.Spans("tools/call up__trace")
	byParent := map[string]string{} // parent span id → own span id
	for _, c := range calls {
		byParent[otlptest.HexID(c.ParentSpanId)] = otlptest.HexID(c.TraceId) + "-" + otlptest.HexID(c.SpanId)
		if otlptest.Attr(c, "mcp.upstream").GetStringValue() != "up" || otlptest.Attr(c, "mcp.outcome").GetStringValue() != "ok" {
			t.Errorf("call span attributes: %v", c.Attributes)
		}
	}
	// The caller's trace is continued, and the upstream got the call's
	// own span as its parent.
	got, ok := byParent["b7ad6b7169203331"]
	if !ok || !strings.HasPrefix(got, "0af7651916cd43dd8448eb211c80319c-") {
		t.Fatalf("no call span in the caller's trace under its span: %v", byParent)
	}
	if tp, ok := traceparent.Parse(seen); !ok || "0af7651916cd43dd8448eb211c80319c-"+fmt.Sprintf("%x", tp.SpanID) != got {
		t.Fatalf("the upstream saw traceparent %q, want the call span %s", seen, got)
	}
	// Without a traceparent, the call joins the calling harness's run.
	callerRuns := rcv.Spans("run caller")
	if len(callerRuns) != 1 {
		t.Fatalf("run spans of the calling harness: %d", len(callerRuns))
	}
	tp, ok := traceparent.Parse(plain)
	if !ok || fmt.Sprintf("%x", tp.TraceID) != otlptest.HexID(callerRuns[0].TraceId) {
		t.Fatalf("a call without a traceparent sent %q upstream, want one in the caller's run trace %x", plain, callerRuns[0].TraceId)
	}

	f.WaitFor("metrics", 30*time.Second, func() bool {
		m := rcv.Metrics()
		return slices.Contains(m, "harness.mcp.calls") && slices.Contains(m, "harness.runs")
	})
	if h := rcv.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer "+secret {
		t.Fatalf("the collector did not get the configured header")
	}
	var info struct {
		Telemetry *struct {
			Endpoint      string `json:"endpoint"`
			SpansExported uint64 `json:"spans_exported"`
			SpansDropped  uint64 `json:"spans_dropped"`
		} `json:"telemetry"`
	}
	f.MustJSON(&info, "daemon-info", "--json")
	if info.Telemetry == nil || info.Telemetry.SpansExported < 4 || info.Telemetry.Endpoint != rcv.URL {
		t.Fatalf("daemon-info telemetry = %+v", info.Telemetry)
	}
	assertNoSecret(t, secret, f.State, f.LogPath)
}

// traceSeen calls the demo upstream's trace tool and returns the
// traceparent it received in _meta.
func traceSeen(t *testing.T, s *mcp.ClientSession, ctx context.Context, meta mcp.Meta) string {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "up__trace", Arguments: map[string]any{}, Meta: meta})
	if err != nil || res.IsError {
		t.Fatalf("up__trace: %v %+v", err, res)
	}
	var out struct {
		Meta string `json:"meta"`
	}
	resultJSON(t, res, &out)
	return out.Meta
}
