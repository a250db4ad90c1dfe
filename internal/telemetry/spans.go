package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/traceparent"
)

// Span and metric attribute keys.
const (
	attrHarness       = "harness.name"
	attrRun           = "harness.run_id"
	attrAgent         = "harness.agent"
	attrOutcome       = "harness.outcome"
	attrExitCode      = "harness.exit_code"
	attrSignal        = "harness.signal"
	attrModel         = "gen_ai.request.model"
	attrTokensIn      = "gen_ai.usage.input_tokens"
	attrTokensOut     = "gen_ai.usage.output_tokens"
	attrCost          = "harness.cost_usd"
	attrAgentState    = "harness.agent_state"
	attrWaitingFor    = "harness.waiting_for"
	attrUpstream      = "mcp.upstream"
	attrTool          = "mcp.tool"
	attrClass         = "mcp.class"
	attrCallOutcome   = "mcp.outcome"
	attrRequestBytes  = "mcp.request_bytes"
	attrResponseBytes = "mcp.response_bytes"
	attrTransport     = "mcp.transport"
	attrCaller        = "mcp.caller"
	attrTokenType     = "gen_ai.token.type"
)

// FacadeUpstream is the upstream a call to harness's own tools is
// counted under.
const FacadeUpstream = "harness"

func (t *Telemetry) event(e api.Event) {
	switch e.Kind {
	case api.EventState:
		if e.RunID != 0 && (e.State == "starting" || e.State == "running") {
			t.runStarted(e)
		}
	case api.EventAgent:
		t.agentState(e)
	case api.EventExit:
		t.runEnded(e)
	}
}

// runStarted opens the run's span, the root of its trace, the first time
// an event names the run.
func (t *Telemetry) runStarted(e api.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.units[e.Unit]
	if u != nil && u.run == e.RunID {
		return
	}
	if u != nil {
		// A run the daemon never saw end (its exit event was dropped).
		t.endLocked(u, e.Time, string(api.RunInterrupted))
	}
	_, span := t.tracer.Start(context.Background(), "run "+e.Unit,
		trace.WithNewRoot(), trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(attrHarness, e.Unit), attribute.Int64(attrRun, int64(e.RunID))))
	t.units[e.Unit] = &unitTrace{run: e.RunID, runSpan: span}
}

// agentState opens a turn when the agent starts working and ends it when
// it is ready again (or limited, or in error); a wait for a person is an
// event on the turn.
func (t *Telemetry) agentState(e api.Event) {
	if e.Agent == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.units[e.Unit]
	if u == nil || u.run != e.RunID || u.runSpan == nil {
		return
	}
	if u.agent == "" && e.Agent.Agent != "" {
		u.agent = e.Agent.Agent
		u.runSpan.SetAttributes(attribute.String(attrAgent, u.agent))
	}
	st := e.Agent.AgentState
	u.state = st
	switch st {
	case api.AgentWorking:
		if u.turnSpan == nil {
			ctx := trace.ContextWithSpan(context.Background(), u.runSpan)
			opts := []trace.SpanStartOption{trace.WithTimestamp(e.Time),
				trace.WithAttributes(attribute.String(attrHarness, e.Unit), attribute.String(attrAgent, u.agent))}
			if from, ok := t.links[e.Unit]; ok {
				delete(t.links, e.Unit)
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: spanContext(from, true)}))
			}
			_, u.turnSpan = t.tracer.Start(ctx, "turn "+e.Unit, opts...)
		}
	case api.AgentWaiting:
		if u.turnSpan != nil {
			u.turnSpan.AddEvent("waiting", trace.WithTimestamp(e.Time),
				trace.WithAttributes(attribute.String(attrWaitingFor, string(e.Agent.WaitingFor))))
		}
	case api.AgentReady, api.AgentLimited, api.AgentError:
		if u.turnSpan != nil {
			u.turnSpan.SetAttributes(attribute.String(attrAgentState, string(st)))
			if st == api.AgentError {
				u.turnSpan.SetStatus(codes.Error, e.Agent.AgentMessage)
			}
			u.turnSpan.End(trace.WithTimestamp(e.Time))
			u.turnSpan = nil
		}
	}
}

// runEnded ends the turn at once and the run once its record is final:
// its outcome, model, tokens and cost come from the run history, which
// the agent's transcript fills in after the exit.
func (t *Telemetry) runEnded(e api.Event) {
	t.mu.Lock()
	u := t.units[e.Unit]
	if u == nil || u.run != e.RunID {
		t.mu.Unlock()
		return
	}
	delete(t.units, e.Unit)
	if u.turnSpan != nil {
		u.turnSpan.End(trace.WithTimestamp(e.Time))
		u.turnSpan = nil
	}
	t.mu.Unlock()

	if e.ExitCode != nil {
		u.runSpan.SetAttributes(attribute.Int(attrExitCode, *e.ExitCode))
	}
	if e.Signal != "" {
		u.runSpan.SetAttributes(attribute.String(attrSignal, e.Signal))
	}
	if t.runs == nil {
		t.finishRun(e.Unit, u, api.Run{Outcome: api.ExitOutcome(e.ExitCode, e.Signal)}, e.Time)
		return
	}
	t.pending.Add(1)
	go func() {
		defer t.pending.Done()
		ctx, cancel := context.WithTimeout(context.Background(), runWait)
		defer cancel()
		run, err := t.runs.Wait(ctx, e.RunID)
		end := e.Time
		if err != nil {
			run = api.Run{Outcome: api.ExitOutcome(e.ExitCode, e.Signal)}
		} else if run.EndedAt != nil {
			end = *run.EndedAt
		}
		t.finishRun(e.Unit, u, run, end)
	}()
}

// finishRun ends a run's span with what its record says and counts it.
func (t *Telemetry) finishRun(unit string, u *unitTrace, run api.Run, end time.Time) {
	outcome := string(run.Outcome)
	if outcome == "" {
		outcome = string(api.RunInterrupted)
	}
	attrs := []attribute.KeyValue{attribute.String(attrOutcome, outcome)}
	if run.Model != "" {
		attrs = append(attrs, attribute.String(attrModel, run.Model))
	}
	if run.Tokens != (api.Tokens{}) {
		attrs = append(attrs, attribute.Int64(attrTokensIn, run.Tokens.Input), attribute.Int64(attrTokensOut, run.Tokens.Output))
	}
	if run.CostUSD > 0 {
		attrs = append(attrs, attribute.Float64(attrCost, run.CostUSD))
	}
	u.runSpan.SetAttributes(attrs...)
	if run.Outcome == api.RunFailed {
		u.runSpan.SetStatus(codes.Error, run.Note)
	}
	u.runSpan.End(trace.WithTimestamp(end))
	t.ins.countRun(unit, outcome, run)
}

// endLocked ends u's spans at when with outcome; mu held.
func (t *Telemetry) endLocked(u *unitTrace, when time.Time, outcome string) {
	if u.turnSpan != nil {
		u.turnSpan.End(trace.WithTimestamp(when))
	}
	u.runSpan.SetAttributes(attribute.String(attrOutcome, outcome))
	u.runSpan.End(trace.WithTimestamp(when))
}

// call is one tools/call (or prompts/get) as a span: a child of the
// traceparent its caller sent, else of the calling harness's turn, with
// the span id the call already sent upstream.
func (t *Telemetry) call(r api.CallRecord) {
	upstream, tool := FacadeUpstream, r.Tool
	if k, rest, ok := strings.Cut(r.Tool, "__"); ok {
		upstream, tool = k, rest
	}
	ctx := context.Background()
	if p, ok := traceparent.Parse(r.TraceParent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, spanContext(p, true))
	}
	if own, ok := traceparent.Parse(r.Trace); ok {
		ctx = withPreset(ctx, own)
	}
	name := "tools/call " + r.Tool
	if r.Kind == api.CallPrompt {
		name = "prompts/get " + r.Tool
	}
	d := time.Duration(r.DurationMS * float64(time.Millisecond))
	_, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(r.Time),
		trace.WithAttributes(
			attribute.String(attrUpstream, upstream), attribute.String(attrTool, tool),
			attribute.String(attrCallOutcome, r.Outcome), attribute.String(attrClass, string(r.Class)),
			attribute.Int(attrRequestBytes, r.RequestBytes), attribute.Int(attrResponseBytes, r.ResponseBytes),
			attribute.String(attrTransport, r.Transport), attribute.String(attrCaller, r.Caller)))
	if r.Harness != "" {
		span.SetAttributes(attribute.String(attrHarness, r.Harness))
	}
	if r.Outcome != api.OutcomeOK {
		span.SetStatus(codes.Error, r.Outcome)
	}
	span.End(trace.WithTimestamp(r.Time.Add(d)))
	t.ins.calls.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String(attrUpstream, upstream), attribute.String(attrCallOutcome, r.Outcome), attribute.String(attrClass, string(r.Class))))
	t.ins.callDur.Record(context.Background(), r.DurationMS, metric.WithAttributes(attribute.String(attrUpstream, upstream)))
}

func spanContext(p traceparent.TP, remote bool) trace.SpanContext {
	var flags trace.TraceFlags
	if p.Sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: p.TraceID, SpanID: p.SpanID, TraceFlags: flags, Remote: remote})
}
