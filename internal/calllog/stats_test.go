package calllog

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func TestHistogramBucketsHoldTheirValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Uint64() >> rng.IntN(64)
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d", v, i)
		}
		if mid := bucketMid(i); math.Abs(mid-float64(v)) > float64(v)/16+0.5 {
			t.Fatalf("value %d in bucket %d whose middle is %g: off by more than 1/16", v, i, mid)
		}
		if i > 0 && bucketOf(v) < bucketOf(v/2) {
			t.Fatalf("buckets not ordered at %d", v)
		}
	}
}

func TestQuantilesSinceStart(t *testing.T) {
	var h histogram
	// 1 ms .. 100 ms, one each, shuffled.
	for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(100) {
		h.add(uint64(i+1) * 1e6)
	}
	for _, tt := range []struct{ q, want float64 }{{0.5, 50e6}, {0.99, 99e6}, {1, 100e6}, {0.001, 1e6}} {
		if got := h.quantile(tt.q); math.Abs(got-tt.want) > tt.want/16 {
			t.Errorf("q%g = %g ns, want %g within 1/16", tt.q, got, tt.want)
		}
	}
	var one histogram
	one.add(1234567)
	if got := one.quantile(0.99); got != 1234567 {
		t.Errorf("a single value is its own quantile: %g", got)
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("quantile of nothing")
	}
}

func TestStatsCountCallsErrorsAndLatency(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	for i := range 10 {
		r := rec("a", "git__push", api.OutcomeOK, float64(i+1))
		if i >= 8 {
			r.Outcome = string(errcode.UpstreamUnavailable)
		}
		l.Record(r)
	}
	p := rec("p/x", "git__push", string(errcode.NotPermitted), 100)
	p.Project = "p"
	l.Record(p)
	pr := rec("", "review", api.OutcomeOK, 3)
	pr.Kind = api.CallPrompt
	l.Record(pr)
	l.Record(rec("", "no_such_tool_1", string(errcode.UnknownTool), 1))
	l.Record(rec("", "nope__x", string(errcode.UnknownNamespace), 1))

	total, tools := l.Stats(func(kind, project, tool string) bool { return project == "" && Namespace(kind, tool) == "git" })
	if total.Calls != 10 || total.Errors["upstream_unavailable"] != 2 || len(total.Errors) != 1 {
		t.Errorf("global git: %+v", total)
	}
	if math.Abs(total.P50MS-5) > 5.0/16 || math.Abs(total.P99MS-10) > 10.0/16 {
		t.Errorf("global git p50 %g p99 %g, want 5 and 10", total.P50MS, total.P99MS)
	}
	if len(tools) != 1 || tools[0].Tool != "git__push" || tools[0].Calls != 10 {
		t.Errorf("global git tools: %+v", tools)
	}
	total, _ = l.Stats(func(_, project, _ string) bool { return project == "p" })
	if total.Calls != 1 || total.Errors["not_permitted"] != 1 {
		t.Errorf("project p: %+v", total)
	}
	_, tools = l.Stats(nil)
	var names []string
	for _, ts := range tools {
		names = append(names, ts.Kind+":"+ts.Tool)
	}
	want := []string{"prompt:review", "tool:(unknown)", "tool:git__push"}
	if len(names) != len(want) {
		t.Fatalf("all tools %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("all tools %v, want %v", names, want)
		}
	}
	if tools[2].Calls != 11 || tools[1].Calls != 2 {
		t.Errorf("merged over projects: %+v", tools)
	}
}

func TestStatsSeriesAreBounded(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	for i := range MaxSeries + 100 {
		l.Record(rec("", "ns__tool"+string(rune('a'+i%26))+string(rune('a'+i/26%26)), api.OutcomeOK, 1))
	}
	_, tools := l.Stats(nil)
	if len(tools) != MaxSeries+1 {
		t.Fatalf("%d series, want %d named and one %s", len(tools), MaxSeries, OtherTool)
	}
	var other uint64
	for _, ts := range tools {
		if ts.Tool == OtherTool {
			other = ts.Calls
		}
	}
	if other == 0 {
		t.Fatalf("calls past the bound are not counted under %s", OtherTool)
	}
}

func TestPrometheusExpositionMatchesTheCalls(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	seed(t, l)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(l)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("the text format does not parse: %v\n%s", err, buf.String())
	}
	counts := map[string]float64{}
	for _, m := range parsed[MetricCalls].GetMetric() {
		counts[label(m, "namespace")+"/"+label(m, "tool")+"/"+label(m, "outcome")] = m.GetCounter().GetValue()
	}
	for k, want := range map[string]float64{
		"harness/harness_list/ok": 2, "harness/harness_stop/not_permitted": 1, "harness/harness_stop/ok": 0,
		"git/git__status/ok": 1, "git/git__push/tool_error": 1,
	} {
		if counts[k] != want {
			t.Errorf("%s %s = %g, want %g (all: %v)", MetricCalls, k, counts[k], want, counts)
		}
	}
	for _, m := range parsed[MetricDuration].GetMetric() {
		if label(m, "tool") == "git__push" {
			s := m.GetSummary()
			if s.GetSampleCount() != 1 || math.Abs(s.GetSampleSum()-0.030) > 1e-9 || len(s.GetQuantile()) != 2 {
				t.Errorf("git__push summary %v", s)
			}
		}
	}
	if got := parsed[MetricWritten].GetMetric()[0].GetCounter().GetValue(); got != 5 {
		t.Errorf("%s = %g", MetricWritten, got)
	}
	if got := parsed[MetricDropped].GetMetric()[0].GetCounter().GetValue(); got != 0 {
		t.Errorf("%s = %g", MetricDropped, got)
	}
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func TestUnknownToolsCountUnderTheirNamespace(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	for _, tool := range []string{"git__nope1", "git__nope2"} {
		l.Record(rec("", tool, string(errcode.UnknownTool), 1))
	}
	l.Record(rec("", "bogus__x", string(errcode.UnknownNamespace), 1))
	l.Record(rec("", "harness_bogus", string(errcode.UnknownTool), 1))
	_, tools := l.Stats(nil)
	got := map[string]uint64{}
	for _, ts := range tools {
		got[ts.Tool] = ts.Calls
	}
	if len(got) != 2 || got["git__"+UnknownTool] != 2 || got[UnknownTool] != 2 {
		t.Fatalf("stats by tool %v", got)
	}
	// The log itself keeps the names as called.
	waitWritten(t, l, 4)
	if names := joinTools(query(t, l, api.CallsArgs{}).Calls); names != "git__nope1 git__nope2 bogus__x harness_bogus" {
		t.Fatalf("recorded tools %q", names)
	}
}

func joinTools(rs []api.CallRecord) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool)
	}
	return strings.Join(out, " ")
}
