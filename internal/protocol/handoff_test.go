package protocol_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/protocol"
)

// stdioHandler is a fakeHandler that also serves sessions on handed-off
// stdio: it upper-cases lines from stdin to stdout until stdin ends or its
// context does, and reports how each session ended.
type stdioHandler struct {
	*fakeHandler
	served  chan string // "eof" or "ctx: <cause>"
	refuse  error       // returned instead of serving, when set
	started chan struct{}
}

func newStdioHandler() *stdioHandler {
	return &stdioHandler{fakeHandler: newFake(), served: make(chan string, 4), started: make(chan struct{}, 4)}
}

func (h *stdioHandler) ServeMCPStdio(ctx context.Context, stdio io.ReadWriteCloser, hello protocol.Hello) error {
	if h.refuse != nil {
		return h.refuse
	}
	h.started <- struct{}{}
	stop := context.AfterFunc(ctx, func() { _ = stdio.Close() })
	defer stop()
	sc := bufio.NewScanner(stdio)
	for sc.Scan() {
		if _, err := io.WriteString(stdio, hello.Token+":"+strings.ToUpper(sc.Text())+"\n"); err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		h.served <- "ctx"
		return ctx.Err()
	}
	h.served <- "eof"
	return nil
}

// handOff makes the handshake with the offer and, when accepted, sends
// the FrameStdio.
func (r *raw) handOff(stdin, stdout *os.File) protocol.Welcome {
	r.t.Helper()
	r.send(protocol.FrameHello, protocol.Hello{Proto: protocol.Version, Mode: protocol.ModeMCP, Token: "tok", Handoff: true})
	ft, p := r.read()
	var w protocol.Welcome
	if ft != protocol.FrameWelcome || json.Unmarshal(p, &w) != nil {
		r.t.Fatalf("got %s %s, want welcome", ft, p)
	}
	if w.Handoff {
		if err := protocol.SendStdio(r.nc.(*net.UnixConn), stdin, stdout); err != nil {
			r.t.Fatal(err)
		}
	}
	return w
}

// ended reads the FrameEnded that closes a handed-off session.
func (r *raw) ended() protocol.Ended {
	r.t.Helper()
	ft, p := r.read()
	var e protocol.Ended
	if ft != protocol.FrameEnded || json.Unmarshal(p, &e) != nil {
		r.t.Fatalf("got %s %s, want ended", ft, p)
	}
	return e
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestStdioHandoffServesOnThePassedDescriptors: the session reads the
// client's stdin and writes its stdout directly, polled (O_NONBLOCK on the
// shared descriptions while it runs); when stdin ends the server releases
// both descriptors, puts their blocking mode back and sends FrameEnded.
func TestStdioHandoffServesOnThePassedDescriptors(t *testing.T) {
	h := newStdioHandler()
	sock, _ := startServer(t, h, nil)
	s := fdtest.StdioPipes(t)
	before := openFDs(t)
	r := dialRaw(t, sock)
	if w := r.handOff(s.InR, s.OutW); !w.Handoff || w.Proto != protocol.Version {
		t.Fatalf("welcome %+v: want the hand-off accepted", w)
	}
	<-h.started
	if _, err := io.WriteString(s.InW, "one\n"); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(s.OutR)
	if line, err := out.ReadString('\n'); err != nil || line != "tok:ONE\n" {
		t.Fatalf("stdout got %q, %v", line, err)
	}
	if !fdtest.Nonblocking(t, s.InR) || !fdtest.Nonblocking(t, s.OutW) {
		t.Fatal("the session does not poll the client's stdio")
	}
	s.InW.Close()
	if e := r.ended(); e.Error != nil {
		t.Fatalf("ended with %+v, want a normal end", e.Error)
	}
	if got := <-h.served; got != "eof" {
		t.Fatalf("session ended by %s, want stdin's EOF", got)
	}
	if fdtest.Nonblocking(t, s.InR) || fdtest.Nonblocking(t, s.OutW) {
		t.Fatal("the client's stdio was left nonblocking")
	}
	r.nc.Close()
	// The server's copies are gone: with the test's own ends closed too,
	// the client's stdout reader sees EOF at once.
	s.OutW.Close()
	if rest, err := io.ReadAll(out); err != nil || len(rest) != 0 {
		t.Fatalf("after the session: %q, %v", rest, err)
	}
	waitFDs(t, before-2) // s.InW and s.OutW closed
}

// waitFDs waits until this process has want open descriptors: the
// server's connection goroutine closes its socket after FrameEnded.
func waitFDs(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, want %d", openFDs(t), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStdioHandoffOnOneSocket: stdin and stdout are one socket (socat
// EXEC:, inetd). Both are served, the client's half-close of its end is
// stdin's EOF, and the description is blocking again afterwards.
func TestStdioHandoffOnOneSocket(t *testing.T) {
	h := newStdioHandler()
	sock, _ := startServer(t, h, nil)
	agent, stdio := fdtest.SocketPairFiles(t)
	r := dialRaw(t, sock)
	if w := r.handOff(stdio, stdio); !w.Handoff {
		t.Fatal("hand-off refused")
	}
	if _, err := io.WriteString(agent, "ping\n"); err != nil {
		t.Fatal(err)
	}
	ag := bufio.NewReader(agent)
	if line, err := ag.ReadString('\n'); err != nil || line != "tok:PING\n" {
		t.Fatalf("agent got %q, %v", line, err)
	}
	if err := unix.Shutdown(fdOf(t, agent), unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	if e := r.ended(); e.Error != nil {
		t.Fatalf("ended with %+v", e.Error)
	}
	if fdtest.Nonblocking(t, stdio) {
		t.Fatal("the shared socket was left nonblocking")
	}
}

func fdOf(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := raw.Control(func(u uintptr) { fd = int(u) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestStdioHandoffEndsWhenTheClientHalfCloses: a client told to stop
// (SIGTERM to `harness mcp`) half-closes the socket; the session's context
// ends, stdio is released and FrameEnded still reaches the client.
func TestStdioHandoffEndsWhenTheClientHalfCloses(t *testing.T) {
	h := newStdioHandler()
	sock, _ := startServer(t, h, nil)
	s := fdtest.StdioPipes(t)
	r := dialRaw(t, sock)
	r.handOff(s.InR, s.OutW)
	<-h.started
	if err := r.nc.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if e := r.ended(); e.Error != nil {
		t.Fatalf("ended with %+v, want a normal end (the client asked)", e.Error)
	}
	if got := <-h.served; got != "ctx" {
		t.Fatalf("session ended by %s, want its context", got)
	}
	if fdtest.Nonblocking(t, s.InR) || fdtest.Nonblocking(t, s.OutW) {
		t.Fatal("the client's stdio was left nonblocking")
	}
}

// TestStdioHandoffShutdownTellsTheClient: Shutdown ends a handed-off
// session and the client learns why, instead of seeing the socket vanish.
func TestStdioHandoffShutdownTellsTheClient(t *testing.T) {
	h := newStdioHandler()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &protocol.Server{Handler: h, Logger: slog.New(slog.DiscardHandler)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s := fdtest.StdioPipes(t)
	r := dialRaw(t, sock)
	r.handOff(s.InR, s.OutW)
	<-h.started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	e := r.ended()
	if e.Error == nil || e.Error.Code != errcode.DaemonUnavailable || !strings.Contains(e.Error.Message, "shutting down") {
		t.Fatalf("ended with %+v, want daemon_unavailable: shutting down", e.Error)
	}
	if fdtest.Nonblocking(t, s.InR) || fdtest.Nonblocking(t, s.OutW) {
		t.Fatal("the client's stdio was left nonblocking")
	}
}

// TestStdioHandoffHandlerErrorReachesTheClient: a session refused after
// the handshake (its token revoked meanwhile) says why in FrameEnded.
func TestStdioHandoffHandlerErrorReachesTheClient(t *testing.T) {
	h := newStdioHandler()
	h.refuse = errcode.Errorf(errcode.NotPermitted, "token revoked")
	sock, _ := startServer(t, h, nil)
	s := fdtest.StdioPipes(t)
	r := dialRaw(t, sock)
	r.handOff(s.InR, s.OutW)
	if e := r.ended(); e.Error == nil || e.Error.Code != errcode.NotPermitted {
		t.Fatalf("ended with %+v, want not_permitted", e.Error)
	}
}

// TestStdioHandoffRefusesWhatItCannotServe: a regular file, one
// descriptor instead of two, or another frame is refused with
// invalid_argument, and every descriptor received is closed.
func TestStdioHandoffRefusesWhatItCannotServe(t *testing.T) {
	h := newStdioHandler()
	sock, _ := startServer(t, h, nil)
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s := fdtest.StdioPipes(t)
	frame := func(payload string) []byte {
		b, err := protocol.AppendFrame(nil, protocol.FrameStdio, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := `{"fds":["stdin","stdout"]}`
	for name, send := range map[string]func(uc *net.UnixConn) error{
		"regular file": func(uc *net.UnixConn) error { return protocol.SendStdio(uc, file, s.OutW) },
		"one descriptor": func(uc *net.UnixConn) error {
			_, _, err := uc.WriteMsgUnix(frame(good), unix.UnixRights(fdOf(t, s.InR)), nil)
			return err
		},
		"three descriptors": func(uc *net.UnixConn) error {
			_, _, err := uc.WriteMsgUnix(frame(good), unix.UnixRights(fdOf(t, s.InR), fdOf(t, s.OutW), fdOf(t, s.InW)), nil)
			return err
		},
		"wrong names": func(uc *net.UnixConn) error {
			_, _, err := uc.WriteMsgUnix(frame(`{"fds":["stdout","stdin"]}`), unix.UnixRights(fdOf(t, s.InR), fdOf(t, s.OutW)), nil)
			return err
		},
		"no descriptors": func(uc *net.UnixConn) error { _, err := uc.Write(frame(good)); return err },
		"another frame": func(uc *net.UnixConn) error {
			b, _ := protocol.AppendFrame(nil, protocol.FrameRequest, []byte(`{}`))
			_, _, err := uc.WriteMsgUnix(b, unix.UnixRights(fdOf(t, s.InR), fdOf(t, s.OutW)), nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := openFDs(t)
			r := dialRaw(t, sock)
			r.send(protocol.FrameHello, protocol.Hello{Proto: protocol.Version, Mode: protocol.ModeMCP, Handoff: true})
			if ft, p := r.read(); ft != protocol.FrameWelcome || !bytes.Contains(p, []byte(`"handoff":true`)) {
				t.Fatalf("got %s %s, want a welcome accepting the hand-off", ft, p)
			}
			if err := send(r.nc.(*net.UnixConn)); err != nil {
				t.Fatal(err)
			}
			if e := r.ended(); e.Error == nil || e.Error.Code != errcode.InvalidArgument {
				t.Fatalf("ended with %+v, want invalid_argument", e.Error)
			}
			r.nc.Close()
			waitFDs(t, before)
		})
	}
	select {
	case <-h.started:
		t.Fatal("a refused hand-off was served")
	default:
	}
}

// TestHandoffIsOfferedAndAcceptedOnly: a client that does not offer (a
// 1.0 CLI) and a handler that cannot serve stdio (like a 1.0 daemon) both
// keep the byte stream after the welcome.
func TestHandoffIsOfferedAndAcceptedOnly(t *testing.T) {
	t.Run("old client", func(t *testing.T) {
		sock, _ := startServer(t, newStdioHandler(), nil)
		r := dialRaw(t, sock)
		r.sendBytes(protocol.FrameHello, []byte(`{"proto":"1.0","mode":"mcp","client":"old","token":"T"}`))
		ft, p := r.read()
		if ft != protocol.FrameWelcome || bytes.Contains(p, []byte("handoff")) {
			t.Fatalf("got %s %s, want a plain welcome", ft, p)
		}
		if _, err := io.WriteString(r.nc, "bytes\n"); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len("T:bytes\n"))
		if _, err := io.ReadFull(r.nc, got); err != nil || string(got) != "T:bytes\n" {
			t.Fatalf("byte stream echo %q, %v", got, err)
		}
	})
	t.Run("handler without stdio serving", func(t *testing.T) {
		sock, _ := startServer(t, newFake(), nil)
		s := fdtest.StdioPipes(t)
		r := dialRaw(t, sock)
		if w := r.handOff(s.InR, s.OutW); w.Handoff {
			t.Fatal("accepted a hand-off its handler cannot serve")
		}
		if _, err := io.WriteString(r.nc, "bytes\n"); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len("tok:bytes\n"))
		if _, err := io.ReadFull(r.nc, got); err != nil || string(got) != "tok:bytes\n" {
			t.Fatalf("byte stream echo %q, %v", got, err)
		}
	})
}

// TestPassable: pipes and sockets can be handed over, a regular file and
// /dev/null cannot; asking leaves a file's blocking mode alone.
func TestPassable(t *testing.T) {
	s := fdtest.StdioPipes(t)
	a, _ := fdtest.SocketPairFiles(t)
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, tc := range map[string]struct {
		f    *os.File
		want bool
	}{"pipe": {s.InR, true}, "socket": {a, true}, "file": {file, false}, "null": {null, false}, "nil": {nil, false}} {
		if got := protocol.Passable(tc.f); got != tc.want {
			t.Errorf("%s: Passable = %t, want %t", name, got, tc.want)
		}
	}
	if fdtest.Nonblocking(t, s.InR) {
		t.Error("Passable changed a blocking pipe's mode")
	}
	if _, err := os.Stat(os.DevNull); errors.Is(err, os.ErrNotExist) {
		t.Fatal("no /dev/null")
	}
}

// TestSendStdioReportsAFailedSend: a hand-off that cannot be sent (the
// daemon gone) is an error, not a silent success.
func TestSendStdioReportsAFailedSend(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	b.Close()
	s := fdtest.StdioPipes(t)
	var err error
	for range 10 { // the first write after the peer's close may still be taken
		if err = protocol.SendStdio(a.(*net.UnixConn), s.InR, s.OutW); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("SendStdio to a closed peer reported success")
	}
}
