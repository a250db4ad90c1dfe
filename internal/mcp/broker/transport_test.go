package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

// memLink is a third kind of upstream, known only to this test: an
// in-process go-sdk server reached over the go-sdk's in-memory transport.
// Registering memTransport for it is all it takes to serve it.
type memLink struct {
	server *mcp.Server
	closed *atomic.Int32 // counts Close calls
}

type memTransport struct {
	link memLink
	mu   sync.Mutex
	ss   *mcp.ServerSession
}

func init() {
	RegisterTransport(func(l memLink, _ Env) (Transport, error) { return &memTransport{link: l}, nil })
}

func (t *memTransport) Dial(ctx context.Context) (mcp.Transport, error) {
	client, server := mcp.NewInMemoryTransports()
	ss, err := t.link.server.Connect(ctx, server, nil)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.ss = ss
	t.mu.Unlock()
	return client, nil
}

func (t *memTransport) Close() error {
	t.link.closed.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ss != nil {
		return t.ss.Close()
	}
	return nil
}

// TestScenario_AThirdTransportPlugsInByRegisteringItsLinkType serves an
// upstream of a kind the broker was not written for: its start is
// reported to the run, its tools are namespaced and classified, calls and
// progress go through, and a detach ends the session and releases the
// transport. A link of a type nobody registered fails its start, saying so.
func TestScenario_AThirdTransportPlugsInByRegisteringItsLinkType(t *testing.T) {
	b := newBroker(t, Options{ConnectTimeout: 10 * time.Second}, map[string]Upstream{"mcp.mem": {Key: "mem"}, "mcp.odd": {Key: "odd"}})
	closed := new(atomic.Int32)
	started := make(chan error, 1)
	ended := make(chan error, 1)
	b.Serve(context.Background(), api.UpstreamRun{Unit: "mcp.mem", Run: 1,
		Link:    memLink{server: demoupstream.NewServer("mem"), closed: closed},
		Started: func(err error) { started <- err },
		Ended:   func(err error) { ended <- err }})
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start reported %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no start report")
	}
	if !connected(b, "mcp.mem")() {
		t.Fatalf("started but not connected: %+v", b.Status())
	}
	if names := toolNames(b.Tools("")); !slices.Contains(names, "mem__echo") {
		t.Fatalf("tools %v lack mem__echo", names)
	}
	if got := text(t, call(t, b, "", "mem__echo", map[string]any{"text": "over memory"})); got != "over memory" {
		t.Fatalf("echo answered %q", got)
	}
	var seen atomic.Int32
	notify := func(context.Context, *mcp.ProgressNotificationParams) error { seen.Add(1); return nil }
	if _, err := b.Call(context.Background(), "", "mem__progress", args(t, map[string]any{"steps": 3, "no_sync": true}), nil, "p1", notify); err != nil {
		t.Fatal(err)
	}
	if n := seen.Load(); n != 3 {
		t.Fatalf("%d progress notifications reached the caller, want 3 (drained before the result)", n)
	}

	b.Detach("mcp.mem", 1, time.Time{}, "stopped")
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("a detached run ended with %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the run never ended after its detach")
	}
	if closed.Load() == 0 {
		t.Fatal("the transport was not closed")
	}
	if _, err := b.Call(context.Background(), "", "mem__echo", args(t, map[string]any{"text": "x"}), nil, nil, nil); !errors.Is(err, errcode.ErrUpstreamUnavailable) {
		t.Fatalf("a call after the detach: %v, want upstream_unavailable", err)
	}

	type unregistered struct{}
	b.Serve(context.Background(), api.UpstreamRun{Unit: "mcp.odd", Run: 1, Link: unregistered{},
		Started: func(err error) { started <- err }})
	if err := <-started; err == nil || !strings.Contains(err.Error(), "no transport serves") {
		t.Fatalf("an unregistered link started with %v", err)
	}
}
