package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/harness-dev/harness/internal/api"
)

// instruments are the metrics the daemon exports.
type instruments struct {
	runs    metric.Int64Counter
	tokens  metric.Int64Counter
	cost    metric.Float64Counter
	calls   metric.Int64Counter
	callDur metric.Float64Histogram
	agents  metric.Int64ObservableGauge
}

func (in *instruments) init(m metric.Meter, states func() map[api.AgentState]int64) error {
	var err error
	if in.runs, err = m.Int64Counter("harness.runs", metric.WithDescription("Runs ended, by harness and outcome.")); err != nil {
		return err
	}
	if in.tokens, err = m.Int64Counter("harness.agent.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of ended agent runs, by harness, model and type.")); err != nil {
		return err
	}
	if in.cost, err = m.Float64Counter("harness.agent.cost", metric.WithUnit("USD"),
		metric.WithDescription("Cost of ended agent runs as the agents report it, by harness and model.")); err != nil {
		return err
	}
	if in.calls, err = m.Int64Counter("harness.mcp.calls", metric.WithDescription("MCP calls through the gateway, by upstream, outcome and class.")); err != nil {
		return err
	}
	if in.callDur, err = m.Float64Histogram("harness.mcp.call.duration", metric.WithUnit("ms"),
		metric.WithDescription("MCP call durations, by upstream.")); err != nil {
		return err
	}
	in.agents, err = m.Int64ObservableGauge("harness.agents", metric.WithDescription("Agent harnesses with a run, by agent state."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for st, n := range states() {
				o.Observe(n, metric.WithAttributes(attribute.String(attrAgentState, string(st))))
			}
			return nil
		}))
	return err
}

// countRun adds an ended run to the counters.
func (in *instruments) countRun(unit, outcome string, run api.Run) {
	ctx := context.Background()
	in.runs.Add(ctx, 1, metric.WithAttributes(attribute.String(attrHarness, unit), attribute.String(attrOutcome, outcome)))
	if run.Tokens == (api.Tokens{}) && run.CostUSD == 0 {
		return
	}
	model := run.Model
	for typ, n := range map[string]int64{"input": run.Tokens.Input, "output": run.Tokens.Output,
		"cache_read": run.Tokens.CacheRead, "cache_write": run.Tokens.CacheWrite} {
		if n > 0 {
			in.tokens.Add(ctx, n, metric.WithAttributes(attribute.String(attrHarness, unit),
				attribute.String(attrModel, model), attribute.String(attrTokenType, typ)))
		}
	}
	if run.CostUSD > 0 {
		in.cost.Add(ctx, run.CostUSD, metric.WithAttributes(attribute.String(attrHarness, unit), attribute.String(attrModel, model)))
	}
}

// agentStates counts the units with a run by their agent state.
func (t *Telemetry) agentStates() map[api.AgentState]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[api.AgentState]int64{}
	for _, u := range t.units {
		if u.state != "" {
			out[u.state]++
		}
	}
	return out
}

// countingMetricExporter counts the metric exports that went and failed.
type countingMetricExporter struct {
	sdkmetric.Exporter
	exported, failed atomic.Uint64
}

func newMetricExporter(ctx context.Context, url string, headers map[string]string, timeout time.Duration) (*countingMetricExporter, error) {
	e, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(url),
		otlpmetrichttp.WithHeaders(headers),
		otlpmetrichttp.WithTimeout(timeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, fmt.Errorf("telemetry: metric exporter: %w", err)
	}
	return &countingMetricExporter{Exporter: e}, nil
}

// Export implements sdkmetric.Exporter.
func (c *countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := c.Exporter.Export(ctx, rm)
	if err != nil {
		c.failed.Add(1)
	} else {
		c.exported.Add(1)
	}
	return err
}
