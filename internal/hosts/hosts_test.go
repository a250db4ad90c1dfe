package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// daemon is a control socket that answers list with its units and
// records the other operations.
type daemon struct {
	mu    sync.Mutex
	units []map[string]any
	ops   []string
}

func (d *daemon) Call(_ context.Context, op string, args json.RawMessage) (any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch op {
	case api.OpList:
		return d.units, nil
	case api.OpStart:
		d.ops = append(d.ops, op+" "+string(args))
		return map[string]any{"results": []any{}}, nil
	}
	return nil, errcode.Errorf(errcode.NotPermitted, "operation %s is refused here", op)
}

func (d *daemon) ServeMCP(context.Context, net.Conn, protocol.Hello) {}

func (d *daemon) set(units ...map[string]any) {
	d.mu.Lock()
	d.units = units
	d.mu.Unlock()
}

// serve starts a protocol server for d at sock; the returned func stops it.
func serve(t *testing.T, sock string, d *daemon) (*protocol.Server, func()) {
	t.Helper()
	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &protocol.Server{Handler: d, Version: "test", Logger: slog.New(slog.DiscardHandler)}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			<-done
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

// changes is an OnChange that a test waits on.
type changes chan string

func (c changes) on(host string) {
	select {
	case c <- host:
	default:
	}
}

// until waits for p's view of host to satisfy cond, woken by changes.
func until(t *testing.T, p *Pool, c changes, what string, cond func(View) bool) View {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, v := range p.Views() {
			if cond(v) {
				return v
			}
		}
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("never: %s; views %+v", what, p.Views())
		}
	}
}

func fast(hs ...Host) Options {
	return Options{Hosts: hs, DialTimeout: 300 * time.Millisecond, CallTimeout: 300 * time.Millisecond,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Refresh: time.Hour}
}

// TestScenario_AHostIsFollowedActedOnAndKeptThroughAnOutage: a host's
// units show, a change it publishes shows (its event reaches OnEvent),
// an action goes to it; when its daemon goes away the view keeps the last
// units with the error, and when it is back the view is live again.
func TestScenario_AHostIsFollowedActedOnAndKeptThroughAnOutage(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "h.sock")
	d := &daemon{}
	d.set(map[string]any{"name": "web", "state": "running"})
	srv, stop := serve(t, sock, d)
	c := make(changes, 1)
	var events atomic.Int32
	opt := fast(Host{Name: "box", Addr: sock})
	opt.OnChange = c.on
	opt.OnEvent = func(host string, ev api.Event) {
		if host == "box" && ev.Unit == "web" {
			events.Add(1)
		}
	}
	p := Start(opt)
	defer p.Close()
	until(t, p, c, "web running", func(v View) bool { return v.Err == "" && strings.Contains(string(v.Units), `"running"`) })

	d.set(map[string]any{"name": "web", "state": "stopped"})
	srv.Publish(api.Event{Kind: api.EventState, Unit: "web", State: "stopped"})
	until(t, p, c, "web stopped", func(v View) bool { return strings.Contains(string(v.Units), `"stopped"`) })
	if events.Load() == 0 {
		t.Fatal("the host's event did not reach OnEvent")
	}
	if err := p.Call(context.Background(), "box", api.OpStart, api.NamesArgs{Names: []string{"web"}}, nil); err != nil {
		t.Fatal(err)
	}
	err := p.Call(context.Background(), "box", api.OpStop, api.NamesArgs{Names: []string{"web"}}, nil)
	if !errors.Is(err, errcode.ErrNotPermitted) || !strings.Contains(err.Error(), "host box: ") {
		t.Fatalf("a refusal from the host: %v", err)
	}
	if err := p.Call(context.Background(), "nowhere", api.OpStart, nil, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Fatalf("an unknown host: %v", err)
	}

	stop()
	v := until(t, p, c, "box down", func(v View) bool { return v.Err != "" })
	if !strings.Contains(string(v.Units), `"stopped"`) || v.Read.IsZero() {
		t.Fatalf("the last view was not kept: %+v", v)
	}
	if err := p.Call(context.Background(), "box", api.OpStart, nil, nil); !errors.Is(err, errcode.ErrDaemonUnavailable) {
		t.Fatalf("an action on a down host: %v", err)
	}
	d.set(map[string]any{"name": "web", "state": "running"})
	serve(t, sock, d)
	until(t, p, c, "box back", func(v View) bool { return v.Err == "" && strings.Contains(string(v.Units), `"running"`) })
}

// TestScenario_ASilentOrGarbageHostNeverHoldsTheCaller: a host that
// accepts and never answers, and one that answers garbage, are shown with
// their error and retried, while Views and Call answer at once.
func TestScenario_ASilentOrGarbageHostNeverHoldsTheCaller(t *testing.T) {
	dir := t.TempDir()
	var accepts [2]atomic.Int32
	var wg sync.WaitGroup
	var lns []net.Listener
	for i, garbage := range []bool{false, true} {
		ln, err := net.Listen("unix", filepath.Join(dir, []string{"silent.sock", "garbage.sock"}[i]))
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepts[i].Add(1)
				if garbage {
					c.Write([]byte("SSH-2.0-nonsense\r\n\x00\x00\x00\x05garbage that is no frame"))
				}
				held = append(held, c)
			}
		}()
	}
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
	}()
	c := make(changes, 1)
	opt := fast(Host{Name: "silent", Addr: lns[0].Addr().String()}, Host{Name: "garbage", Addr: lns[1].Addr().String()})
	opt.OnChange = c.on
	// silent was heard from before (a previous pool): its rows stay shown.
	read := time.Now().Add(-time.Minute)
	opt.Last = map[string]View{"silent": {Addr: lns[0].Addr().String(), Units: json.RawMessage(`[{"name":"web"}]`), Read: read}}
	p := Start(opt)
	defer p.Close()

	start := time.Now()
	vs := p.Views()
	err := p.Call(context.Background(), "silent", api.OpStart, nil, nil)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Fatalf("Views and Call took %s", took)
	}
	if len(vs) != 2 || vs[0].Name != "silent" || vs[0].Err == "" || string(vs[0].Units) != `[{"name":"web"}]` || !vs[0].Read.Equal(read) ||
		vs[1].Units != nil || !errors.Is(err, errcode.ErrDaemonUnavailable) {
		t.Fatalf("views %+v, call %v", vs, err)
	}
	until(t, p, c, "silent says it did not answer", func(v View) bool {
		return v.Name == "silent" && strings.Contains(v.Err, "no answer within")
	})
	until(t, p, c, "garbage says why", func(v View) bool {
		return v.Name == "garbage" && v.Err != "" && v.Err != "connecting"
	})
	// Both are tried again.
	for accepts[0].Load() < 2 || accepts[1].Load() < 2 {
		<-c
	}
}
