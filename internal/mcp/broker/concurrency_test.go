package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestConcurrentCallersGetTheirOwnAnswers(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				want := fmt.Sprintf("caller %d message %d", i, j)
				res, err := b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": want}), nil, nil, nil)
				if err != nil {
					errs <- err
					return
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != want {
					errs <- fmt.Errorf("caller %d got %q, want %q", i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// startSlow starts a slow call and returns once the upstream handler runs.
func startSlow(t *testing.T, b *Broker, ctx context.Context, ms int) <-chan error {
	t.Helper()
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := b.Call(ctx, "", "alpha__slow", args(t, map[string]any{"ms": ms}), nil, "slow-token",
			func(context.Context, *mcp.ProgressNotificationParams) error {
				once.Do(func() { close(started) })
				return nil
			})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("slow call ended before it started: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("slow call never started")
	}
	return done
}

func TestSlowCallDoesNotHoldUpFastOne(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	slow := startSlow(t, b, context.Background(), 2000)
	if got := text(t, call(t, b, "", "alpha__echo", map[string]any{"text": "fast"})); got != "fast" {
		t.Errorf("echo = %q", got)
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call finished before the fast one returned (err %v)", err)
	default:
	}
	if err := <-slow; err != nil {
		t.Errorf("slow call: %v", err)
	}
}

func TestInFlightBound(t *testing.T) {
	b := newBroker(t, Options{MaxInFlight: 1}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	slowCtx, cancelSlow := context.WithCancel(context.Background())
	slow := startSlow(t, b, slowCtx, 60000)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := b.Call(ctx, "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a free slot") {
		t.Errorf("second call with the slot taken: err = %v", err)
	}
	cancelSlow()
	if err := <-slow; !errors.Is(err, context.Canceled) {
		t.Errorf("slow call after cancel: %v", err)
	}
	if got := text(t, call(t, b, "", "alpha__echo", map[string]any{"text": "free"})); got != "free" {
		t.Errorf("echo after the slot freed = %q", got)
	}
}

func TestCancellationReachesUpstream(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	if got := text(t, call(t, b, "", "alpha__cancelled", map[string]any{})); got != "0" {
		t.Fatalf("cancelled before = %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	slow := startSlow(t, b, ctx, 60000)
	cancel()
	if err := <-slow; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "upstream alpha") {
		t.Errorf("cancelled call: err = %v", err)
	}
	// The upstream's cancelled tool blocks until its count reaches 1, which
	// only a notifications/cancelled for the slow call can cause.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	res, err := b.Call(wctx, "", "alpha__cancelled", args(t, map[string]any{"at_least": 1}), nil, nil, nil)
	if err != nil {
		t.Fatalf("waiting for the upstream to see the cancellation: %v", err)
	}
	if got := text(t, res); got != "1" {
		t.Errorf("cancelled after = %q", got)
	}
}

func TestProgressReachesTheCallerUnderItsOwnToken(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	// Two sessions using the same token at once must not see each other's
	// notifications: the broker gives each call its own upstream token.
	const steps = 5
	var wg sync.WaitGroup
	got := make([][]float64, 2)
	for i := range 2 {
		wg.Go(func() {
			var mu sync.Mutex
			res, err := b.Call(context.Background(), "", "alpha__progress", args(t, map[string]any{"steps": steps}), nil, "same",
				func(_ context.Context, p *mcp.ProgressNotificationParams) error {
					mu.Lock()
					defer mu.Unlock()
					if p.ProgressToken != "same" || p.Total != steps {
						t.Errorf("caller %d: notification %+v", i, p)
					}
					got[i] = append(got[i], p.Progress)
					return nil
				})
			if err != nil || text(t, res) != "done" {
				t.Errorf("caller %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	for i, g := range got {
		if !slices.Equal(g, []float64{1, 2, 3, 4, 5}) {
			t.Errorf("caller %d progress = %v", i, g)
		}
	}
}

func TestListChangedRelists(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	attach(t, b, "alpha", "alpha", 1)
	fired := make(chan struct{}, 1)
	defer b.OnChange(func() {
		select {
		case fired <- struct{}{}:
		default:
		}
	})()
	if got := text(t, call(t, b, "", "alpha__add_tool", map[string]any{"name": "fresh"})); got != "added fresh" {
		t.Fatalf("add_tool = %q", got)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("no change event after tools/list_changed")
	}
	waitFor(t, b, "alpha__fresh listed", func() bool { return slices.Contains(toolNames(b.Tools("")), "alpha__fresh") })
	if got := text(t, call(t, b, "", "alpha__fresh", map[string]any{})); got != "fresh called" {
		t.Errorf("fresh = %q", got)
	}
}

func TestUpstreamDyingMidCall(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"alpha": {Key: "alpha"}})
	p := attach(t, b, "alpha", "alpha", 1)
	slow := startSlow(t, b, context.Background(), 60000)
	p.kill(t)
	err := <-slow
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) || !strings.Contains(err.Error(), "upstream alpha") {
		t.Errorf("call cut off by the upstream's death: err = %v", err)
	}
	// Before the supervisor's Detach arrives the broker already knows the
	// connection is gone.
	waitFor(t, b, "alpha disconnected", func() bool { return !connected(b, "alpha")() })
	_, err = b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil)
	if !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Errorf("call after death: %v", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	b := New(nil, Options{})
	b.Configure(map[string]Upstream{"alpha": {Key: "alpha"}})
	p := spawn(t, "alpha")
	serveRun(b, nil, "alpha", 1, p.stdin, p.stdout)
	waitFor(t, b, "alpha connected", connected(b, "alpha"))
	ctx, cancel := context.WithCancel(context.Background())
	slow := startSlow(t, b, ctx, 60000)
	cancel()
	<-slow
	b.Close()
	// Closing the session closed the upstream's pipes, so it ends by
	// itself: on EOF, or by SIGPIPE when it still wrote an answer (to the
	// cancelled call) after the broker closed its end of stdout.
	<-p.waited
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !p.cmd.ProcessState.Success() && !(ws.Signaled() && ws.Signal() == syscall.SIGPIPE) {
		t.Errorf("upstream exit after Close: %v", p.cmd.ProcessState)
	}
	goleak.VerifyNone(t, ignore)
	if _, err := b.Call(context.Background(), "", "alpha__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil); !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Errorf("call after Close: %v", err)
	}
}
