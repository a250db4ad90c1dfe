package protocol_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/protocol"
)

func TestFrameRoundTripAndErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := protocol.WriteFrame(&buf, protocol.FrameRequest, []byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(buf.Bytes()[:4]); got != 9 {
		t.Fatalf("length field %d, want 9 (type byte + 8 payload bytes)", got)
	}
	ft, p, err := protocol.ReadFrame(&buf, 0)
	if err != nil || ft != protocol.FrameRequest || string(p) != `{"id":1}` {
		t.Fatalf("ReadFrame = %s %q %v", ft, p, err)
	}
	if _, _, err := protocol.ReadFrame(&buf, 0); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}

	cases := []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"zero length", []byte{0, 0, 0, 0}, 0, protocol.ErrMalformed},
		{"bad type", []byte{0, 0, 0, 1, 99}, 0, protocol.ErrMalformed},
		{"too large", []byte{0, 0, 0, 11, 3}, 10, protocol.ErrFrameTooLarge},
		{"above MaxFrame", []byte{0x7f, 0, 0, 0}, 0, protocol.ErrFrameTooLarge},
		{"truncated", []byte{0, 0, 0, 5, 3, 'a'}, 0, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		if _, _, err := protocol.ReadFrame(bytes.NewReader(c.in), c.max); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if protocol.FrameEvent.String() != "event" || protocol.FrameType(42).String() != "frame(42)" {
		t.Errorf("FrameType names: %s %s", protocol.FrameEvent, protocol.FrameType(42))
	}
}

func TestVersion(t *testing.T) {
	if m, err := protocol.Major(protocol.Version); err != nil || m != 1 {
		t.Fatalf("Major(Version) = %d, %v", m, err)
	}
	if err := protocol.CheckVersion("1.7"); err != nil {
		t.Errorf("minor difference refused: %v", err)
	}
	for _, v := range []string{"2.0", "", "one"} {
		if err := protocol.CheckVersion(v); !errors.Is(err, errcode.ErrVersionMismatch) {
			t.Errorf("CheckVersion(%q) = %v, want version_mismatch", v, err)
		}
	}
}

func TestHandshakeAndCall(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, sock)
	w := r.hello(protocol.ModeControl)
	if w.Proto != protocol.Version || w.Version != "test" || w.PID != os.Getpid() {
		t.Fatalf("welcome %+v", w)
	}
	resp := r.call(7, "hello")
	var h protocol.Hello
	if err := json.Unmarshal(resp.Result, &h); err != nil || h.Client != "raw-test" || h.Token != "tok" {
		t.Fatalf("handler saw hello %+v (%v); response %+v", h, err, resp)
	}
	if resp = r.call(8, "echo"); resp.ID != 8 || string(resp.Result) != "{}" {
		t.Fatalf("absent args reached the handler as %s, want {}", resp.Result)
	}
	if resp = r.call(9, ""); resp.Error == nil || resp.Error.Code != errcode.InvalidArgument {
		t.Fatalf("empty op answered %+v, want invalid_argument", resp)
	}
	if resp = r.call(10, "plain"); resp.Error == nil || resp.Error.Code != errcode.Internal {
		t.Fatalf("codeless error answered %+v, want internal", resp)
	}
}

func TestVersionMismatchAnsweredAndClosed(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, sock)
	r.send(protocol.FrameHello, protocol.Hello{Proto: "2.0", Mode: protocol.ModeControl})
	b := r.expectErrorThenClose(errcode.VersionMismatch)
	if b.Message != "daemon speaks protocol 1.x, client 2.0" {
		t.Fatalf("message %q", b.Message)
	}
}

// A client may send requests right behind the hello without waiting for
// the welcome (client.CallOnce does): they wait in the socket until the
// handshake is done, and a refused hello is still answered with its Error
// frame.
func TestRequestPipelinedBehindHello(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	frames := func(proto string) []byte {
		var out []byte
		for _, f := range []struct {
			t protocol.FrameType
			v any
		}{
			{protocol.FrameHello, protocol.Hello{Proto: proto, Mode: protocol.ModeControl, Client: "raw-test"}},
			{protocol.FrameRequest, protocol.Request{ID: 1, Op: "echo", Args: json.RawMessage(`{"a":1}`)}},
			{protocol.FrameRequest, protocol.Request{ID: 2, Op: "echo", Args: json.RawMessage(`[2]`)}},
		} {
			b, err := json.Marshal(f.v)
			if err != nil {
				t.Fatal(err)
			}
			if out, err = protocol.AppendFrame(out, f.t, b); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	r := dialRaw(t, sock)
	if _, err := r.nc.Write(frames(protocol.Version)); err != nil {
		t.Fatal(err)
	}
	if ft, p := r.read(); ft != protocol.FrameWelcome {
		t.Fatalf("got %s frame %s, want welcome", ft, p)
	}
	got := map[uint64]string{}
	for range 2 {
		resp := r.response()
		got[resp.ID] = string(resp.Result)
	}
	if got[1] != `{"a":1}` || got[2] != `[2]` {
		t.Fatalf("pipelined requests answered %v", got)
	}

	r = dialRaw(t, sock)
	if _, err := r.nc.Write(frames("2.0")); err != nil {
		t.Fatal(err)
	}
	r.expectErrorThenClose(errcode.VersionMismatch)
}

func TestBadHandshakes(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, sock)
	r.send(protocol.FrameRequest, protocol.Request{ID: 1, Op: "list"})
	if b := r.expectErrorThenClose(errcode.InvalidArgument); !strings.Contains(b.Message, "first frame must be hello") {
		t.Errorf("message %q", b.Message)
	}
	r = dialRaw(t, sock)
	r.send(protocol.FrameHello, protocol.Hello{Proto: protocol.Version, Mode: "telnet"})
	r.expectErrorThenClose(errcode.InvalidArgument)
	r = dialRaw(t, sock)
	r.sendBytes(protocol.FrameHello, []byte("{not json"))
	r.expectErrorThenClose(errcode.InvalidArgument)
}

// Each bad frame closes only its own connection; a parallel client and
// new connections keep working.
func TestBadFramesCloseOnlyThatConnection(t *testing.T) {
	sock, _ := startServer(t, newFake(), func(s *protocol.Server) { s.MaxFrame = 1024 })
	good := dialRaw(t, sock)
	good.hello(protocol.ModeControl)

	bad := []struct {
		name string
		send func(r *raw)
		msg  string
	}{
		{"oversized", func(r *raw) {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 1<<20)
			if _, err := r.nc.Write(hdr[:]); err != nil {
				t.Fatal(err)
			}
		}, "frame too large"},
		{"zero length", func(r *raw) {
			if _, err := r.nc.Write([]byte{0, 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
		}, "malformed frame"},
		{"unknown type", func(r *raw) {
			if _, err := r.nc.Write([]byte{0, 0, 0, 3, 200, '{', '}'}); err != nil {
				t.Fatal(err)
			}
		}, "unknown type"},
		{"garbage json", func(r *raw) { r.sendBytes(protocol.FrameRequest, []byte("\x00garbage")) }, "bad request JSON"},
		{"wrong frame", func(r *raw) { r.send(protocol.FrameWelcome, protocol.Welcome{}) }, "unexpected welcome frame"},
	}
	for i, c := range bad {
		r := dialRaw(t, sock)
		r.hello(protocol.ModeControl)
		c.send(r)
		if b := r.expectErrorThenClose(errcode.InvalidArgument); !strings.Contains(b.Message, c.msg) {
			t.Errorf("%s: message %q, want it to mention %q", c.name, b.Message, c.msg)
		}
		if resp := good.call(uint64(i), "echo"); resp.Error != nil {
			t.Fatalf("after %s the parallel client got %+v", c.name, resp.Error)
		}
	}
	// The oversized check also applies before the handshake.
	r := dialRaw(t, sock)
	if _, err := r.nc.Write([]byte{0, 1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	r.expectErrorThenClose(errcode.InvalidArgument)
}

func TestResultLargerThanFrameIsAnError(t *testing.T) {
	sock, _ := startServer(t, newFake(), func(s *protocol.Server) { s.MaxFrame = 1024 })
	r := dialRaw(t, sock)
	r.hello(protocol.ModeControl)
	resp := r.call(1, "big")
	if resp.Error == nil || resp.Error.Code != errcode.Internal || !strings.Contains(resp.Error.Message, "frame limit") {
		t.Fatalf("oversized result answered %+v", resp)
	}
	if resp = r.call(2, "echo"); resp.Error != nil {
		t.Fatalf("connection unusable after oversized result: %+v", resp.Error)
	}
}

func TestHandlerPanicAnsweredInternal(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, sock)
	r.hello(protocol.ModeControl)
	resp := r.call(1, "panic")
	if resp.ID != 1 || resp.Error == nil || resp.Error.Code != errcode.Internal || !strings.Contains(resp.Error.Message, "boom") {
		t.Fatalf("panic answered %+v", resp)
	}
	if resp = r.call(2, "echo"); resp.Error != nil {
		t.Fatalf("same connection after panic: %+v", resp.Error)
	}
	other := dialRaw(t, sock)
	other.hello(protocol.ModeControl)
	if resp = other.call(3, "echo"); resp.Error != nil {
		t.Fatalf("new connection after panic: %+v", resp.Error)
	}
}

// The MCP hand-off must not lose bytes the client sent right behind the
// hello, in the same write, before it saw the welcome.
func TestMCPModeHandsOverRawStream(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	r := dialRaw(t, sock)
	hello, err := json.Marshal(protocol.Hello{Proto: protocol.Version, Mode: protocol.ModeMCP, Token: "T"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := protocol.WriteFrame(&buf, protocol.FrameHello, hello); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("first\n")
	if _, err := r.nc.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if ft, p := r.read(); ft != protocol.FrameWelcome {
		t.Fatalf("got %s %s, want welcome", ft, p)
	}
	if _, err := io.WriteString(r.nc, "second\n"); err != nil {
		t.Fatal(err)
	}
	want := "T:first\nT:second\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.nc, got); err != nil || string(got) != want {
		t.Fatalf("echo %q (%v), want %q", got, err, want)
	}
}

func TestMCPStreamOutlivesTheHandshakeWriteDeadline(t *testing.T) {
	sock, _ := startServer(t, newFake(), func(s *protocol.Server) { s.WriteTimeout = 50 * time.Millisecond })
	r := dialRaw(t, sock)
	r.hello(protocol.ModeMCP)
	// Past the deadline the welcome was written under, the session still
	// answers: an MCP stream is long-lived.
	time.Sleep(200 * time.Millisecond)
	if _, err := io.WriteString(r.nc, "late\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("tok:late\n"))
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(r.nc, got); err != nil || string(got) != "tok:late\n" {
		t.Fatalf("echo after the write deadline: %q (%v)", got, err)
	}
}

func TestSubscribeAndSlowSubscriber(t *testing.T) {
	sock, srv := startServer(t, newFake(), func(s *protocol.Server) { s.EventBuffer = 4 })

	// A subscriber that never reads: its socket buffer and queue fill up.
	stuck := dialRaw(t, sock)
	stuck.hello(protocol.ModeControl)
	if resp := stuck.call(1, api.OpSubscribe); resp.Error != nil {
		t.Fatalf("subscribe: %+v", resp.Error)
	}
	big := strings.Repeat("m", 8192)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 { // ~16 MiB: far beyond any socket buffer
			srv.Publish(api.Event{Kind: api.EventState, Unit: "u", RunID: uint64(i), Message: big})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	if srv.DroppedEvents() == 0 {
		t.Fatal("no events counted as dropped for the stuck subscriber")
	}

	live := dialRaw(t, sock)
	live.hello(protocol.ModeControl)
	if resp := live.call(2, api.OpSubscribe); resp.Error != nil || string(resp.Result) != "{}" {
		t.Fatalf("subscribe answered %+v", resp)
	}
	code := 3
	srv.Publish(api.Event{Kind: api.EventExit, Unit: "web", RunID: 9, ExitCode: &code, Signal: "SIGTERM"})
	ft, p := live.read()
	if ft != protocol.FrameEvent {
		t.Fatalf("got %s %s, want event", ft, p)
	}
	var ev api.Event
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "exit" || ev.Unit != "web" || ev.RunID != 9 || ev.ExitCode == nil || *ev.ExitCode != 3 || ev.Time.IsZero() {
		t.Fatalf("event %+v", ev)
	}
	for _, key := range []string{`"run_id":9`, `"exit_code":3`, `"signal":"SIGTERM"`, `"time":`} {
		if !strings.Contains(string(p), key) {
			t.Errorf("event JSON %s lacks %s", p, key)
		}
	}
	// Requests still work on a subscribed connection.
	if resp := live.call(3, "echo"); resp.Error != nil {
		t.Fatalf("call on subscribed conn: %+v", resp.Error)
	}
}

// Shutdown cancels in-flight handlers, closes MCP streams, subscribers and
// half-open connections, and returns once the server's goroutines are gone
// (goleak checks that nothing is left at exit).
func TestShutdownEndsEverything(t *testing.T) {
	h := newFake()
	sock := t.TempDir() + "/s.sock"
	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &protocol.Server{Handler: h, Logger: slog.New(slog.DiscardHandler)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	ctl := dialRaw(t, sock)
	ctl.hello(protocol.ModeControl)
	ctl.call(1, api.OpSubscribe)
	ctl.send(protocol.FrameRequest, protocol.Request{ID: 2, Op: "block"})
	if op := <-h.started; op != "block" {
		t.Fatalf("started %q", op)
	}
	mcp := dialRaw(t, sock)
	mcp.hello(protocol.ModeMCP)
	silent := dialRaw(t, sock) // never says hello; must not hold Shutdown for the handshake timeout

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	for name, r := range map[string]*raw{"control": ctl, "mcp": mcp, "silent": silent} {
		if _, err := io.ReadAll(r.nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s connection: %v, want it closed by the server", name, err)
		}
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Shutdown: %v, want it removed", err)
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("socket still accepts after Shutdown")
	}
}

func TestServeAfterShutdown(t *testing.T) {
	srv := &protocol.Server{Handler: newFake()}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := protocol.Listen(t.TempDir() + "/s.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); !errors.Is(err, protocol.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	srv.Publish(api.Event{Kind: api.EventReload}) // no subscribers: must not panic or block
}
