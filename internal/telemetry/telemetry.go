// Package telemetry exports what the daemon does as OpenTelemetry traces
// and metrics over OTLP/HTTP (docs/design/telemetry.md): a span per run,
// a child per agent turn, a child per tools/call through the gateway, and
// counters of runs, tokens, cost and calls. It reads the daemon's events
// and call records after the fact, on its own goroutine, so supervision
// and the call path never wait for it; when it is off there is no
// Telemetry at all.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/traceparent"
)

// Defaults of Options.
const (
	DefaultServiceName    = "harness"
	DefaultExportTimeout  = 5 * time.Second
	DefaultMetricInterval = 30 * time.Second
	// inQueue events and call records wait for the telemetry goroutine;
	// beyond that they are dropped, counted.
	inQueue = 4096
	// runWait bounds the wait for a run's record once it has exited (its
	// tokens and cost come from the agent's transcript).
	runWait = 10 * time.Second
)

// RunSource gives a run's record once it has ended: *runs.Store.
type RunSource interface {
	Wait(ctx context.Context, id uint64) (api.Run, error)
}

// Options configure New.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP base URL (http://host:4318);
	// /v1/traces and /v1/metrics are added to it.
	Endpoint string
	// Headers go with every export (resolved: they may hold secrets).
	Headers        map[string]string
	ServiceName    string
	Version        string
	Runs           RunSource
	Logger         *slog.Logger
	ExportTimeout  time.Duration
	MetricInterval time.Duration
	// OnError hears every failed span export; it must not block.
	OnError func(error)
}

// Telemetry turns events and call records into spans and metrics.
type Telemetry struct {
	log      *slog.Logger
	endpoint string
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	proc     *queueProcessor
	mp       *sdkmetric.MeterProvider
	mexp     *countingMetricExporter
	ins      instruments
	runs     RunSource

	in        chan item
	inDropped atomic.Uint64
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	pending   sync.WaitGroup // runs waiting for their record

	mu    sync.Mutex
	units map[string]*unitTrace // by unit name
	// links are the delegating calls the next turn of a harness links
	// to (LinkNextTurn), by unit name.
	links map[string]traceparent.TP
}

// item is one event or call record for the telemetry goroutine.
type item struct {
	ev   *api.Event
	call *api.CallRecord
	ack  chan struct{} // Flush's marker: closed once reached
}

// unitTrace is the open run and turn of one unit.
type unitTrace struct {
	run      uint64
	agent    string
	runSpan  trace.Span
	turnSpan trace.Span
	state    api.AgentState
}

// New starts exporting to o.Endpoint. It does not contact the collector:
// a collector that is down costs failed exports, counted, nothing more.
func New(o Options) (*Telemetry, error) {
	base := strings.TrimRight(o.Endpoint, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("telemetry: otlp_endpoint %q: want an http:// or https:// URL", o.Endpoint)
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.ExportTimeout <= 0 {
		o.ExportTimeout = DefaultExportTimeout
	}
	if o.MetricInterval <= 0 {
		o.MetricInterval = DefaultMetricInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx := context.Background()
	res := resource.NewSchemaless(semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.Version))

	texp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(base+"/v1/traces"),
		otlptracehttp.WithHeaders(o.Headers),
		otlptracehttp.WithTimeout(o.ExportTimeout),
		// Retries would hold the one exporting goroutine; a failed batch
		// is counted and the next one tried.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	proc := newQueueProcessor(texp, o.ExportTimeout, o.OnError)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSpanProcessor(proc),
		sdktrace.WithIDGenerator(presetIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))

	mexp, err := newMetricExporter(ctx, base+"/v1/metrics", o.Headers, o.ExportTimeout)
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, err
	}
	t := &Telemetry{
		log: o.Logger, endpoint: base, tp: tp, proc: proc, mexp: mexp, runs: o.Runs,
		tracer: tp.Tracer("github.com/harness-dev/harness"),
		in:     make(chan item, inQueue),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		units:  map[string]*unitTrace{},
	}
	t.mp = sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp,
			sdkmetric.WithInterval(o.MetricInterval), sdkmetric.WithTimeout(o.ExportTimeout))))
	if err := t.ins.init(t.mp.Meter("github.com/harness-dev/harness"), t.agentStates); err != nil {
		_ = tp.Shutdown(ctx)
		_ = t.mp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: metrics: %w", err)
	}
	go t.loop()
	return t, nil
}

// Observe takes one daemon event. It never blocks: a full queue drops it,
// counted.
func (t *Telemetry) Observe(e api.Event) {
	switch e.Kind {
	case api.EventState, api.EventExit, api.EventAgent:
	default:
		return
	}
	t.put(item{ev: &e})
}

// Record takes one call record (session.CallRecorder's half); it never
// blocks.
func (t *Telemetry) Record(r api.CallRecord) { t.put(item{call: &r}) }

func (t *Telemetry) put(it item) {
	select {
	case t.in <- it:
	default:
		t.inDropped.Add(1)
	}
}

// CallParent is the traceparent a tools/call of harness continues when
// its caller sent none: the harness's open turn, else its run. Safe from
// any goroutine; cheap (one lock, no allocation but the answer).
func (t *Telemetry) CallParent(harness string) (traceparent.TP, bool) {
	if harness == "" {
		return traceparent.TP{}, false
	}
	t.mu.Lock()
	u := t.units[harness]
	var sc trace.SpanContext
	if u != nil {
		switch {
		case u.turnSpan != nil:
			sc = u.turnSpan.SpanContext()
		case u.runSpan != nil:
			sc = u.runSpan.SpanContext()
		}
	}
	t.mu.Unlock()
	if !sc.IsValid() {
		return traceparent.TP{}, false
	}
	return traceparent.TP{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Sampled: sc.IsSampled()}, true
}

// LinkNextTurn makes the next turn span of harness link to from, the
// span of the call that delegated work to it: the turn stays in its
// run's trace, and the link leads from it to the caller's trace.
func (t *Telemetry) LinkNextTurn(harness string, from traceparent.TP) {
	if harness == "" || !from.Valid() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.links == nil {
		t.links = map[string]traceparent.TP{}
	}
	t.links[harness] = from
}

// Stats is daemon_info's view.
func (t *Telemetry) Stats() *api.TelemetryInfo {
	return &api.TelemetryInfo{
		Endpoint:            t.endpoint,
		SpansExported:       t.proc.exported.Load(),
		SpansDropped:        t.proc.dropped.Load(),
		SpansFailed:         t.proc.failed.Load(),
		MetricExports:       t.mexp.exported.Load(),
		MetricExportsFailed: t.mexp.failed.Load(),
		EventsDropped:       t.inDropped.Load(),
	}
}

// Flush exports what is queued (tests and shutdown). Export failures are
// counted, not returned: only ctx ending is an error.
func (t *Telemetry) Flush(ctx context.Context) error {
	// Let the goroutine take what was queued before this call.
	ack := make(chan struct{})
	select {
	case t.in <- item{ack: ack}:
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		return nil
	}
	select {
	case <-ack:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.pending.Wait()
	_ = t.tp.ForceFlush(ctx) // failures are counted by the processor
	_ = t.mp.ForceFlush(ctx) // and by the metric exporter
	return ctx.Err()
}

// Close ends the open spans as they stand, exports what it can within
// ctx and stops.
func (t *Telemetry) Close(ctx context.Context) error {
	t.closeOnce.Do(func() { close(t.stop) })
	<-t.done
	t.pending.Wait()
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

func (t *Telemetry) loop() {
	defer close(t.done)
	for {
		select {
		case it := <-t.in:
			t.handle(it)
		case <-t.stop:
			for {
				select {
				case it := <-t.in:
					t.handle(it)
				default:
					t.endAll()
					return
				}
			}
		}
	}
}

func (t *Telemetry) handle(it item) {
	switch {
	case it.ev != nil:
		t.event(*it.ev)
	case it.call != nil:
		t.call(*it.call)
	case it.ack != nil:
		close(it.ack)
	}
}

// endAll ends every open span at shutdown: the daemon going away ends
// its runs' spans as interrupted (their processes are stopped or kept,
// but this daemon no longer watches them).
func (t *Telemetry) endAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for name, u := range t.units {
		if u.turnSpan != nil {
			u.turnSpan.End(trace.WithTimestamp(now))
		}
		if u.runSpan != nil {
			u.runSpan.SetAttributes(attribute.String(attrOutcome, string(api.RunInterrupted)))
			u.runSpan.End(trace.WithTimestamp(now))
		}
		delete(t.units, name)
	}
}
