// Package otlptest is an OTLP/HTTP collector for tests: it decodes what
// harness exports as the protobuf the OTLP exporters write, so a test sees
// the spans and metrics a real collector would. Imported by tests only.
package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/HTTP collector on loopback.
type Receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	metrics []string // metric names, in arrival order
	headers []http.Header
}

// New starts a Receiver, closed when the test ends.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		switch req.URL.Path {
		case "/v1/traces":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				r.mu.Unlock()
				http.Error(w, err.Error(), 400)
				return
			}
			for _, rs := range m.ResourceSpans {
				for _, a := range rs.GetResource().GetAttributes() {
					if a.Key == "service.name" {
						r.service = append(r.service, a.GetValue().GetStringValue())
					}
				}
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
				}
			}
		case "/v1/metrics":
			var m colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				r.mu.Unlock()
				http.Error(w, err.Error(), 400)
				return
			}
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						r.metrics = append(r.metrics, mt.Name)
					}
				}
			}
		default:
			r.mu.Unlock()
			http.NotFound(w, req)
			return
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(200)
	}))
	t.Cleanup(r.Close)
	return r
}

// Span is the received span named name; it fails the test when there is
// not exactly one.
func (r *Receiver) Span(t testing.TB, name string) *tracepb.Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []*tracepb.Span
	for _, s := range r.spans {
		if s.Name == name {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		names := []string{}
		for _, s := range r.spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans named %q: %d, want 1 (all: %q)", name, len(got), names)
	}
	return got[0]
}

// Spans are the spans received so far whose name has prefix.
func (r *Receiver) Spans(prefix string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// Metrics are the names of the metrics received so far.
func (r *Receiver) Metrics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.metrics)
}

// Services are the service.name of every span export received.
func (r *Receiver) Services() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.service)
}

// Headers are the headers of every request received.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.headers)
}

// Attr is the value of a span's attribute key, nil when it has none.
func Attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

// HexID is a span's or trace's id as the traceparent format writes it.
func HexID(b []byte) string { return hex.EncodeToString(b) }
