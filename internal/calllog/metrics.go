package calllog

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/harness-dev/harness/internal/api"
)

// Metric names of the collector.
const (
	MetricCalls         = "harness_mcp_calls_total"
	MetricDuration      = "harness_mcp_call_duration_seconds"
	MetricRequestBytes  = "harness_mcp_call_request_bytes_total"
	MetricResponseBytes = "harness_mcp_call_response_bytes_total"
	MetricWritten       = "harness_call_log_written_total"
	MetricDropped       = "harness_call_log_dropped_total"
)

var (
	toolLabels = []string{"kind", "namespace", "tool"}

	descCalls = prometheus.NewDesc(MetricCalls,
		"MCP tools/call and prompts/get answered since the daemon started, by outcome (ok, an error code, or tool_error).",
		append(slices.Clone(toolLabels), "outcome"), nil)
	descDuration = prometheus.NewDesc(MetricDuration,
		"Duration of MCP calls; the quantiles cover every call since the daemon started.",
		toolLabels, nil)
	descRequestBytes = prometheus.NewDesc(MetricRequestBytes,
		"Bytes of MCP call arguments received since the daemon started.", toolLabels, nil)
	descResponseBytes = prometheus.NewDesc(MetricResponseBytes,
		"Bytes of MCP call results sent since the daemon started.", toolLabels, nil)
	descWritten = prometheus.NewDesc(MetricWritten,
		"Call records written to the call log since the daemon started.", nil, nil)
	descDropped = prometheus.NewDesc(MetricDropped,
		"Call records dropped since the daemon started: the writer fell behind or the disk failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (l *Log) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descDuration, descRequestBytes, descResponseBytes, descWritten, descDropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the stats of every tool and
// prompt, summed over projects.
func (l *Log) Collect(ch chan<- prometheus.Metric) {
	for k, c := range l.stats.merged(nil) {
		labels := []string{k.Kind, Namespace(k.Kind, k.Tool), k.Tool}
		ok := c.calls
		for code, n := range c.errors {
			ok -= n
			ch <- constMetric(descCalls, prometheus.CounterValue, float64(n), append(slices.Clone(labels), code)...)
		}
		ch <- constMetric(descCalls, prometheus.CounterValue, float64(ok), append(slices.Clone(labels), api.OutcomeOK)...)
		s, err := prometheus.NewConstSummary(descDuration, c.hist.n, float64(c.hist.sum)/1e9,
			map[float64]float64{0.5: c.hist.quantile(0.5) / 1e9, 0.99: c.hist.quantile(0.99) / 1e9}, labels...)
		if err != nil {
			s = prometheus.NewInvalidMetric(descDuration, err)
		}
		ch <- s
		ch <- constMetric(descRequestBytes, prometheus.CounterValue, float64(c.reqBytes), labels...)
		ch <- constMetric(descResponseBytes, prometheus.CounterValue, float64(c.respBytes), labels...)
	}
	ch <- constMetric(descWritten, prometheus.CounterValue, float64(l.Written()))
	ch <- constMetric(descDropped, prometheus.CounterValue, float64(l.Dropped()))
}

// constMetric is prometheus.NewConstMetric that reports a bad label value
// (a tool name is whatever a client sent) as an invalid metric, not a panic.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
