package broker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/endpoint"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

// BenchmarkProxiedCall measures one proxied tools/call (echo) through the
// broker to the same demo server over stdio pipes and over Streamable HTTP
// on loopback, both in this process, so the ratio of the two is the cost
// of the transport: a POST per call, an SSE response, the header
// transport, the status note and the progress counting on the stream.
func BenchmarkProxiedCall(b *testing.B) {
	for _, kind := range []string{"stdio", "http"} {
		b.Run(kind, func(b *testing.B) {
			brk := New(slog.New(slog.DiscardHandler), Options{})
			brk.Configure(map[string]Upstream{"mcp.x": {Key: "x"}})
			var stop func()
			switch kind {
			case "stdio":
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				done := make(chan struct{})
				go func() {
					defer close(done)
					// It ends when the broker closes its stdin; how (EOF,
					// or a write to the closed stdout) is not measured here.
					_ = demoupstream.Serve(context.Background(), inR, outW, "bench")
					outW.Close()
				}()
				serveRun(brk, nil, "mcp.x", 1, inW, outR)
				stop = func() { brk.Close(); <-done }
			case "http":
				srv := demoupstream.NewHTTPServer("bench")
				if err := srv.Start("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				ended := make(chan error, 1)
				brk.Serve(context.Background(), api.UpstreamRun{Unit: "mcp.x", Run: 1, Link: endpoint.Target{URL: srv.URL(), Header: http.Header{}}, Ended: func(err error) { ended <- err }})
				stop = func() { brk.Close(); <-ended; srv.Stop() }
			}
			defer stop()
			deadline := time.After(15 * time.Second)
			for {
				ch := brk.Changed()
				if st := brk.Status(); len(st) == 1 && st[0].Connected {
					break
				}
				select {
				case <-ch:
				case <-deadline:
					b.Fatal("not connected")
				}
			}
			args := json.RawMessage(`{"text":"x"}`)
			ctx := context.Background()
			for b.Loop() {
				if _, err := brk.Call(ctx, "", "x__echo", args, nil, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
