package protocol_test

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
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHandler is a Handler whose ops exercise the server's paths.
type fakeHandler struct {
	release chan struct{} // "slow" waits for it
	started chan string   // "block" and "slow" announce themselves here
}

func newFake() *fakeHandler {
	return &fakeHandler{release: make(chan struct{}), started: make(chan string, 16)}
}

func (h *fakeHandler) Call(ctx context.Context, op string, args json.RawMessage) (any, error) {
	switch op {
	case "echo":
		return args, nil
	case "hello":
		hello, ok := protocol.HelloFrom(ctx)
		if !ok {
			return nil, errors.New("no hello in ctx")
		}
		return hello, nil
	case "missing":
		return nil, errcode.Errorf(errcode.UnknownHarness, "harness %q", "ghost")
	case "plain":
		return nil, errors.New("no code here")
	case "panic":
		panic("boom")
	case "big":
		return strings.Repeat("x", 4096), nil
	case "slow":
		h.started <- op
		select {
		case <-h.release:
			return "slow", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "block":
		h.started <- op
		<-ctx.Done()
		return nil, fmt.Errorf("block: %w", ctx.Err())
	}
	return nil, errcode.Errorf(errcode.InvalidArgument, "unknown op %q", op)
}

// ServeMCP echoes the stream line by line, prefixed with the token.
func (h *fakeHandler) ServeMCP(ctx context.Context, conn net.Conn, hello protocol.Hello) {
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if _, err := fmt.Fprintf(conn, "%s:%s\n", hello.Token, sc.Text()); err != nil {
			return
		}
	}
}

// startServer serves h on a fresh socket and shuts it down at cleanup,
// checking that Serve returned nil.
func startServer(t *testing.T, h protocol.Handler, tune func(*protocol.Server)) (string, *protocol.Server) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "h.sock")
	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	srv := &protocol.Server{Handler: h, Version: "test", Logger: slog.New(slog.DiscardHandler)}
	if tune != nil {
		tune(srv)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	})
	return sock, srv
}

// raw is a hand-driven client connection that speaks frames directly.
type raw struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, sock string) *raw {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = nc.Close() }) // may already be closed by the test
	// A generous bound so a server bug fails the test instead of hanging it.
	if err := nc.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	return &raw{t: t, nc: nc}
}

func (r *raw) send(ft protocol.FrameType, v any) {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatalf("marshal: %v", err)
	}
	r.sendBytes(ft, b)
}

func (r *raw) sendBytes(ft protocol.FrameType, b []byte) {
	r.t.Helper()
	if err := protocol.WriteFrame(r.nc, ft, b); err != nil {
		r.t.Fatalf("write frame: %v", err)
	}
}

func (r *raw) read() (protocol.FrameType, []byte) {
	r.t.Helper()
	ft, p, err := protocol.ReadFrame(r.nc, protocol.MaxFrame)
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return ft, p
}

// hello completes a handshake in the given mode.
func (r *raw) hello(mode string) protocol.Welcome {
	r.t.Helper()
	r.send(protocol.FrameHello, protocol.Hello{Proto: protocol.Version, Mode: mode, Client: "raw-test", Token: "tok"})
	ft, p := r.read()
	if ft != protocol.FrameWelcome {
		r.t.Fatalf("got %s frame %s, want welcome", ft, p)
	}
	var w protocol.Welcome
	if err := json.Unmarshal(p, &w); err != nil {
		r.t.Fatalf("welcome: %v", err)
	}
	return w
}

// call sends one request and returns the next response.
func (r *raw) call(id uint64, op string) protocol.Response {
	r.t.Helper()
	r.send(protocol.FrameRequest, protocol.Request{ID: id, Op: op})
	return r.response()
}

func (r *raw) response() protocol.Response {
	r.t.Helper()
	ft, p := r.read()
	if ft != protocol.FrameResponse {
		r.t.Fatalf("got %s frame %s, want response", ft, p)
	}
	var resp protocol.Response
	if err := json.Unmarshal(p, &resp); err != nil {
		r.t.Fatalf("response: %v", err)
	}
	return resp
}

// expectErrorThenClose asserts an Error frame with code, then end of stream.
func (r *raw) expectErrorThenClose(code errcode.Code) errcode.Body {
	r.t.Helper()
	ft, p := r.read()
	if ft != protocol.FrameError {
		r.t.Fatalf("got %s frame %s, want error", ft, p)
	}
	var b errcode.Body
	if err := json.Unmarshal(p, &b); err != nil {
		r.t.Fatalf("error body: %v", err)
	}
	if b.Code != code {
		r.t.Fatalf("error code %q (%s), want %q", b.Code, b.Message, code)
	}
	// A peer that closes with our bytes unread makes Linux report a reset
	// instead of EOF; both mean the server closed the connection.
	_, _, err := protocol.ReadFrame(r.nc, protocol.MaxFrame)
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		r.t.Fatalf("after error frame: %v, want EOF (connection closed)", err)
	}
	return b
}
