package traceparent

import (
	"context"
	"testing"
)

func TestParse_TheSpecExampleAndWhatItRefuses(t *testing.T) {
	const ex = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tp, ok := Parse(ex)
	if !ok || !tp.Sampled || tp.String() != ex {
		t.Fatalf("Parse(%q) = %+v %v; String %q", ex, tp, ok, tp.String())
	}
	if tp, ok := Parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future"); !ok || tp.Sampled {
		t.Fatalf("a later version is read by its first fields: %+v %v", tp, ok)
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) ok", bad)
		}
	}
}

func TestChild_KeepsTheTraceAndTakesANewSpan(t *testing.T) {
	p, _ := Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	c := Child(p)
	if c.TraceID != p.TraceID || c.SpanID == p.SpanID || !c.Valid() || !c.Sampled {
		t.Fatalf("Child(%v) = %v", p, c)
	}
	root := Child(TP{})
	if !root.Valid() || root.TraceID == p.TraceID {
		t.Fatalf("Child of nothing = %v, want a new trace", root)
	}
	ctx := With(context.Background(), c)
	if got, ok := From(ctx); !ok || got != c {
		t.Fatalf("From(With(c)) = %v %v", got, ok)
	}
	if _, ok := From(context.Background()); ok {
		t.Fatal("From(empty) ok")
	}
}
