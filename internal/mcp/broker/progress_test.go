package broker

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/harness-dev/harness/internal/mcp/demoupstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// attachInProcess serves a demo upstream called name in this process over
// pipes, attaches it as run of unit and waits until it is connected. The
// upstream ends when the test does.
func attachInProcess(t *testing.T, b *Broker, unit, name string, run uint64) {
	t.Helper()
	cr, sw := io.Pipe() // upstream stdout
	sr, cw := io.Pipe() // upstream stdin
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := demoupstream.Serve(ctx, sr, sw, name); err != nil {
			t.Errorf("upstream %s: %v", name, err)
		}
		// As a process exit would: the broker's reads end.
		sw.Close()
		sr.Close()
	}()
	t.Cleanup(func() {
		cancel()
		cw.Close() // EOF on the upstream's stdin ends Serve
		<-done
	})
	serveRun(b, nil, unit, run, cw, cr)
	waitFor(t, b, unit+" connected", connected(b, unit))
}

// An upstream that returns right after its last progress notification,
// without the ping the demo upstream normally sends, must still have every
// notification reach the caller before Call returns: the go-sdk client
// delivers the result ahead of the notifications still queued for its
// handler, and the broker has to wait for them.
func TestProgressSentJustBeforeTheResultIsDelivered(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attachInProcess(t, b, "alpha", "alpha", 1)
	const steps = 8
	want := make([]float64, steps)
	for i := range want {
		want[i] = float64(i + 1)
	}
	for call := range 20 {
		var (
			mu       sync.Mutex
			got      []float64
			returned atomic.Bool
		)
		res, err := b.Call(context.Background(), "", "alpha__progress", args(t, map[string]any{"steps": steps, "no_sync": true}), nil, call,
			func(_ context.Context, p *mcp.ProgressNotificationParams) error {
				if returned.Load() {
					t.Errorf("call %d: notify after Call returned: %+v", call, p)
				}
				if p.ProgressToken != call {
					t.Errorf("call %d: token %v", call, p.ProgressToken)
				}
				mu.Lock()
				defer mu.Unlock()
				got = append(got, p.Progress)
				return nil
			})
		returned.Store(true)
		if err != nil || text(t, res) != "done" {
			t.Fatalf("call %d: %v %+v", call, err, res)
		}
		mu.Lock()
		if !slices.Equal(got, want) {
			t.Errorf("call %d: progress = %v, want %v", call, got, want)
		}
		mu.Unlock()
	}
}
