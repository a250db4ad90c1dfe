package telemetry

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-dev/harness/internal/traceparent"
)

// presetIDs gives a span the ids its context presets, else random ones.
// A tools/call picks its span id when it starts, so the traceparent it
// sends upstream names it, and its span is made from the call record
// once the call is over.
type presetIDs struct{}

type presetKey struct{}

func withPreset(ctx context.Context, tp traceparent.TP) context.Context {
	return context.WithValue(ctx, presetKey{}, tp)
}

// NewIDs implements sdktrace.IDGenerator.
func (presetIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if tp, ok := ctx.Value(presetKey{}).(traceparent.TP); ok && tp.Valid() {
		return tp.TraceID, tp.SpanID
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		_, _ = rand.Read(tid[:])
	}
	return tid, randomSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (presetIDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	if tp, ok := ctx.Value(presetKey{}).(traceparent.TP); ok && tp.Valid() && tp.TraceID == traceID {
		return tp.SpanID
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return sid
}
