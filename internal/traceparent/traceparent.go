// Package traceparent reads and writes W3C Trace Context `traceparent`
// values and carries the one a tools/call sends upstream through its
// context (docs/design/telemetry.md). It is a leaf: the session and the
// broker use it without knowing whether tracing is on.
package traceparent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Header is the HTTP header and the `_meta` key that carry a traceparent.
const Header = "traceparent"

// TP is a parsed traceparent: a trace id, the id of the span that is the
// parent of whatever receives it, and the sampled flag.
type TP struct {
	TraceID [16]byte
	SpanID  [8]byte
	Sampled bool
}

// Valid reports whether tp has non-zero ids, as the format requires.
func (tp TP) Valid() bool { return tp.TraceID != [16]byte{} && tp.SpanID != [8]byte{} }

// String is tp in the version-00 format.
func (tp TP) String() string {
	flags := "00"
	if tp.Sampled {
		flags = "01"
	}
	return "00-" + hex.EncodeToString(tp.TraceID[:]) + "-" + hex.EncodeToString(tp.SpanID[:]) + "-" + flags
}

// Parse reads a traceparent value. Versions other than 00 are read by
// their first four fields, as the format asks of a reader that knows an
// older version; anything malformed or all-zero is not ok.
func Parse(s string) (TP, bool) {
	var tp TP
	s = strings.TrimSpace(s)
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return tp, false
	}
	ver := s[:2]
	if ver == "ff" || !isHex(ver) || (ver == "00" && len(s) != 55) || (ver != "00" && len(s) > 55 && s[55] != '-') {
		return tp, false
	}
	if !decode(tp.TraceID[:], s[3:35]) || !decode(tp.SpanID[:], s[36:52]) {
		return tp, false
	}
	var flags [1]byte
	if !decode(flags[:], s[53:55]) {
		return tp, false
	}
	tp.Sampled = flags[0]&1 == 1
	return tp, tp.Valid()
}

// decode is hex.Decode that refuses upper-case digits (the format's
// hex is lower-case).
func decode(dst []byte, s string) bool {
	if strings.ToLower(s) != s {
		return false
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

func isHex(s string) bool {
	var b [1]byte
	return len(s) == 2 && decode(b[:], s)
}

// Child is a new span of tp's trace: the same trace id, a fresh span id,
// sampled. With an invalid tp it starts a new trace.
func Child(tp TP) TP {
	c := TP{TraceID: tp.TraceID, Sampled: true}
	if !tp.Valid() {
		_, _ = rand.Read(c.TraceID[:]) // crypto/rand.Read never fails
	}
	for c.SpanID == [8]byte{} {
		_, _ = rand.Read(c.SpanID[:])
	}
	return c
}

type key struct{}

// With returns ctx carrying tp as the traceparent to send upstream.
func With(ctx context.Context, tp TP) context.Context { return context.WithValue(ctx, key{}, tp) }

// From is the traceparent ctx carries for upstreams, if any.
func From(ctx context.Context) (TP, bool) {
	tp, ok := ctx.Value(key{}).(TP)
	return tp, ok && tp.Valid()
}
