package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeHandler struct {
	release chan struct{}
	started chan string
}

func newFake() *fakeHandler {
	return &fakeHandler{release: make(chan struct{}), started: make(chan string, 16)}
}

func (h *fakeHandler) Call(ctx context.Context, op string, args json.RawMessage) (any, error) {
	switch op {
	case "echo":
		return args, nil
	case "missing":
		return nil, errcode.Errorf(errcode.UnknownHarness, "harness %q", "ghost")
	case "panic":
		panic("kaboom")
	case "slow":
		h.started <- op
		select {
		case <-h.release:
			return map[string]string{"who": "slow"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, errcode.Errorf(errcode.InvalidArgument, "unknown op %q", op)
}

// ServeMCP echoes lines prefixed with what the hello carried.
func (h *fakeHandler) ServeMCP(ctx context.Context, conn net.Conn, hello protocol.Hello) {
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if _, err := fmt.Fprintf(conn, "%s/%t:%s\n", hello.Token, hello.AllowControl, sc.Text()); err != nil {
			return
		}
	}
}

type daemon struct {
	sock   string
	srv    *protocol.Server
	served chan error
}

func startDaemon(t *testing.T, h protocol.Handler) *daemon {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "h.sock")
	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{sock: sock, srv: &protocol.Server{Handler: h, Version: "test", Logger: slog.New(slog.DiscardHandler)},
		served: make(chan error, 1)}
	go func() { d.served <- d.srv.Serve(ln) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

func (d *daemon) stop(t *testing.T) {
	if d.served == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-d.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	d.served = nil
}

func dial(t *testing.T, sock string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), sock)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// testCtx bounds a test so a bug fails it instead of hanging the suite.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWelcome(t *testing.T) {
	d := startDaemon(t, newFake())
	c := dial(t, d.sock)
	if w := c.Welcome(); w.Proto != protocol.Version || w.Version != "test" || w.PID == 0 {
		t.Fatalf("welcome %+v", w)
	}
}

// A slow call in flight does not hold back fast ones on the same connection.
func TestConcurrentCallsCompleteOutOfOrder(t *testing.T) {
	h := newFake()
	d := startDaemon(t, h)
	c := dial(t, d.sock)
	ctx := testCtx(t)

	slow := make(chan error, 1)
	var slowRes map[string]string
	go func() { slow <- c.Call(ctx, "slow", nil, &slowRes) }()
	<-h.started

	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			var got map[string]int
			if err := c.Call(ctx, "echo", map[string]int{"n": i}, &got); err != nil {
				errs <- err
				return
			}
			if got["n"] != i {
				errs <- fmt.Errorf("call %d got answer %v", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call finished before release: %v", err)
	default:
	}
	close(h.release)
	if err := <-slow; err != nil || slowRes["who"] != "slow" {
		t.Fatalf("slow call: %v %v", slowRes, err)
	}
}

func TestErrorCodesRoundTrip(t *testing.T) {
	d := startDaemon(t, newFake())
	c := dial(t, d.sock)
	ctx := testCtx(t)

	err := c.Call(ctx, "missing", nil, nil)
	var remote *errcode.Remote
	if !errors.Is(err, errcode.ErrUnknownHarness) || !errors.As(err, &remote) || !strings.Contains(remote.Message, `"ghost"`) {
		t.Fatalf("err %v, want a Remote unknown_harness naming ghost", err)
	}
	if errcode.Of(err) != errcode.UnknownHarness {
		t.Fatalf("errcode.Of = %q", errcode.Of(err))
	}

	err = c.Call(ctx, "panic", nil, nil)
	if !errors.Is(err, errcode.ErrInternal) || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("panic surfaced as %v, want internal", err)
	}
	var out string
	if err := c.Call(ctx, "echo", json.RawMessage(`"still here"`), &out); err != nil || out != "still here" {
		t.Fatalf("after panic: %q %v", out, err)
	}
	if err := c.Call(ctx, "echo", make(chan int), nil); err == nil {
		t.Fatal("unencodable args accepted")
	}
}

func TestCallCancelAbandonsWait(t *testing.T) {
	h := newFake()
	d := startDaemon(t, h)
	c := dial(t, d.sock)

	ctx, cancel := context.WithCancel(testCtx(t))
	res := make(chan error, 1)
	go func() { res <- c.Call(ctx, "slow", nil, nil) }()
	<-h.started
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	close(h.release) // the late answer arrives and must be discarded quietly
	var out string
	if err := c.Call(testCtx(t), "echo", json.RawMessage(`"ok"`), &out); err != nil || out != "ok" {
		t.Fatalf("client after abandoned call: %q %v", out, err)
	}
}

func TestSubscribe(t *testing.T) {
	d := startDaemon(t, newFake())
	c := dial(t, d.sock)
	ctx, cancel := context.WithCancel(testCtx(t))
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.srv.Publish(api.Event{Kind: api.EventFlapping, Unit: "worker", State: "degraded"})
	ev := <-events
	if ev.Kind != "flapping" || ev.Unit != "worker" || ev.State != "degraded" {
		t.Fatalf("event %+v", ev)
	}
	cancel()
	for range events { // drains anything in flight, then must end
	}
	if err := c.Call(testCtx(t), "echo", nil, nil); err != nil {
		t.Fatalf("call after unsubscribe: %v", err)
	}
}

func TestDaemonGoneFailsCallsAndEndsSubscriptions(t *testing.T) {
	h := newFake()
	d := startDaemon(t, h)
	c := dial(t, d.sock)
	events, err := c.Subscribe(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { res <- c.Call(testCtx(t), "slow", nil, nil) }()
	<-h.started
	d.stop(t)
	if err := <-res; !errors.Is(err, errcode.ErrDaemonUnavailable) {
		t.Fatalf("in-flight call when daemon stopped: %v, want daemon_unavailable", err)
	}
	for range events {
	}
	if err := c.Call(testCtx(t), "echo", nil, nil); !errors.Is(err, errcode.ErrDaemonUnavailable) {
		t.Fatalf("call on dead connection: %v", err)
	}
}

func TestCloseFailsPendingCalls(t *testing.T) {
	h := newFake()
	d := startDaemon(t, h)
	c, err := client.Dial(testCtx(t), d.sock)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { res <- c.Call(testCtx(t), "slow", nil, nil) }()
	<-h.started
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("pending call after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDialMissingOrStaleSocket(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nobody.sock")
	_, err := client.Dial(testCtx(t), missing)
	if !errors.Is(err, errcode.ErrDaemonUnavailable) || !strings.Contains(err.Error(), "daemon not running at "+missing) {
		t.Fatalf("missing socket: %v", err)
	}

	stale := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DialMCP(testCtx(t), stale, "", false); !errors.Is(err, errcode.ErrDaemonUnavailable) {
		t.Fatalf("stale socket: %v", err)
	}
}

// fakeDaemon answers one handshake with the given frame, as a daemon of
// another protocol version would.
func fakeDaemon(t *testing.T, ft protocol.FrameType, payload string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "f.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer nc.Close()
		ht, p, err := protocol.ReadFrame(nc, protocol.MaxFrame)
		var hello protocol.Hello
		if err != nil || ht != protocol.FrameHello || json.Unmarshal(p, &hello) != nil || hello.Proto != protocol.Version {
			t.Errorf("fake daemon got %s %s %v", ht, p, err)
			return
		}
		if err := protocol.WriteFrame(nc, ft, []byte(payload)); err != nil {
			t.Errorf("fake daemon write: %v", err)
		}
		_, _ = io.Copy(io.Discard, nc) // until the client hangs up
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return sock
}

func TestVersionMismatch(t *testing.T) {
	sock := fakeDaemon(t, protocol.FrameError, `{"code":"version_mismatch","message":"daemon speaks protocol 2.x, client 1.0"}`)
	_, err := client.Dial(testCtx(t), sock)
	if !errors.Is(err, errcode.ErrVersionMismatch) || !strings.Contains(err.Error(), "daemon speaks protocol 2.x, client 1.0") {
		t.Fatalf("Dial: %v, want version_mismatch with the daemon's message", err)
	}

	// A daemon that welcomes us with another major is refused by the client too.
	sock = fakeDaemon(t, protocol.FrameWelcome, `{"proto":"3.1","version":"x","pid":1}`)
	if _, err := client.Dial(testCtx(t), sock); !errors.Is(err, errcode.ErrVersionMismatch) {
		t.Fatalf("Dial to a 3.x daemon: %v", err)
	}
}

func TestDialMCPEchoesRawStream(t *testing.T) {
	d := startDaemon(t, newFake())
	nc, err := client.DialMCP(testCtx(t), d.sock, "tok", true)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	msg := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if _, err := io.WriteString(nc, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || line != "tok/true:"+msg+"\n" {
		t.Fatalf("echo %q %v", line, err)
	}
}

// CallOnce answers as Dial + Call do: results, raw results, daemon errors.
func TestCallOnce(t *testing.T) {
	d := startDaemon(t, newFake())
	ctx := testCtx(t)
	var out map[string]int
	if err := client.CallOnce(ctx, d.sock, "echo", map[string]int{"n": 7}, &out); err != nil || out["n"] != 7 {
		t.Fatalf("echo: %v %v", out, err)
	}
	var raw json.RawMessage
	if err := client.CallOnce(ctx, d.sock, "echo", json.RawMessage(`[1, {"a":"<b>"}]`), &raw); err != nil || string(raw) != `[1,{"a":"\u003cb\u003e"}]` {
		t.Fatalf("raw echo: %s %v", raw, err)
	}
	if err := client.CallOnce(ctx, d.sock, "echo", nil, nil); err != nil {
		t.Fatalf("echo without result: %v", err)
	}
	err := client.CallOnce(ctx, d.sock, "missing", nil, &out)
	var remote *errcode.Remote
	if !errors.Is(err, errcode.ErrUnknownHarness) || !errors.As(err, &remote) || !strings.Contains(remote.Message, `"ghost"`) {
		t.Fatalf("err %v, want a Remote unknown_harness naming ghost", err)
	}
	if err := client.CallOnce(ctx, d.sock, "echo", make(chan int), nil); err == nil {
		t.Fatal("unencodable args accepted")
	}
	missing := filepath.Join(t.TempDir(), "nobody.sock")
	if err := client.CallOnce(ctx, missing, "echo", nil, nil); !errors.Is(err, errcode.ErrDaemonUnavailable) ||
		!strings.Contains(err.Error(), "daemon not running at "+missing) {
		t.Fatalf("missing socket: %v", err)
	}
}

// The request sent behind the hello does not hide a refused handshake.
func TestCallOnceVersionMismatch(t *testing.T) {
	sock := fakeDaemon(t, protocol.FrameError, `{"code":"version_mismatch","message":"daemon speaks protocol 2.x, client 1.0"}`)
	err := client.CallOnce(testCtx(t), sock, "echo", nil, nil)
	if !errors.Is(err, errcode.ErrVersionMismatch) || !strings.Contains(err.Error(), "daemon speaks protocol 2.x, client 1.0") {
		t.Fatalf("CallOnce: %v, want version_mismatch with the daemon's message", err)
	}
	sock = fakeDaemon(t, protocol.FrameWelcome, `{"proto":"3.1","version":"x","pid":1}`)
	if err := client.CallOnce(testCtx(t), sock, "echo", nil, nil); !errors.Is(err, errcode.ErrVersionMismatch) {
		t.Fatalf("CallOnce to a 3.x daemon: %v", err)
	}
}

func TestCallOnceCancel(t *testing.T) {
	h := newFake()
	d := startDaemon(t, h)
	ctx, cancel := context.WithCancel(testCtx(t))
	res := make(chan error, 1)
	go func() { res <- client.CallOnce(ctx, d.sock, "slow", nil, nil) }()
	<-h.started
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
}
