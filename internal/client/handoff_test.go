package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/protocol"
)

// stdioFake is fakeHandler plus sessions on handed-off stdio: each stdin
// line comes back on stdout prefixed "stdio:", until stdin ends or the
// session's context does.
type stdioFake struct {
	*fakeHandler
	handed chan struct{}
}

func (h *stdioFake) ServeMCPStdio(ctx context.Context, stdio io.ReadWriteCloser, hello protocol.Hello) error {
	h.handed <- struct{}{}
	stop := context.AfterFunc(ctx, func() { _ = stdio.Close() })
	defer stop()
	sc := bufio.NewScanner(stdio)
	for sc.Scan() {
		if _, err := io.WriteString(stdio, "stdio:"+sc.Text()+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// roundTrip writes a line to stdin and returns the line that comes out.
func roundTrip(t *testing.T, p *fdtest.Stdio, rd *bufio.Reader, line string) string {
	t.Helper()
	if _, err := io.WriteString(p.InW, line+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = p.OutR.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("stdout: %v", err)
	}
	return strings.TrimSuffix(got, "\n")
}

func serve(ctx context.Context, sock string, opt client.MCPOptions, p *fdtest.Stdio) chan error {
	done := make(chan error, 1)
	go func() { done <- client.ServeMCP(ctx, sock, opt, p.InR, p.OutW, io.Discard) }()
	return done
}

func waitErr(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeMCP did not return")
	}
	return nil
}

// TestServeMCPHandsStdioToADaemonThatTakesIt: pipes are handed over (the
// session's lines come from the stdio handler, not the byte stream), stdin's
// end ends the session with nil, and the pipes are blocking again. With
// the hand-off switched off the same daemon gets a byte stream.
func TestServeMCPHandsStdioToADaemonThatTakesIt(t *testing.T) {
	h := &stdioFake{fakeHandler: newFake(), handed: make(chan struct{}, 1)}
	d := startDaemon(t, h)
	for _, handoff := range []bool{true, false} {
		p := fdtest.StdioPipes(t)
		done := serve(testCtx(t), d.sock, client.MCPOptions{Token: "tok", Handoff: handoff}, p)
		want := "tok/false:hi" // ServeMCP: the byte stream
		if handoff {
			want = "stdio:hi"
		}
		if got := roundTrip(t, p, bufio.NewReader(p.OutR), "hi"); got != want {
			t.Fatalf("handoff %t: got %q, want %q", handoff, got, want)
		}
		p.InW.Close()
		if err := waitErr(t, done); err != nil {
			t.Fatalf("handoff %t: ServeMCP = %v", handoff, err)
		}
		if fdtest.Nonblocking(t, p.InR) || fdtest.Nonblocking(t, p.OutW) {
			t.Fatalf("handoff %t: stdio left nonblocking", handoff)
		}
	}
	select {
	case <-h.handed:
	default:
		t.Fatal("the hand-off never reached the handler")
	}
}

// TestServeMCPCancelEndsAHandedOffSession: a signal to `harness mcp`
// (ctx) asks the daemon to end the session; ServeMCP returns nil once the
// daemon has said so, with stdio blocking again.
func TestServeMCPCancelEndsAHandedOffSession(t *testing.T) {
	h := &stdioFake{fakeHandler: newFake(), handed: make(chan struct{}, 1)}
	d := startDaemon(t, h)
	p := fdtest.StdioPipes(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := serve(ctx, d.sock, client.MCPOptions{Handoff: true}, p)
	if got := roundTrip(t, p, bufio.NewReader(p.OutR), "x"); got != "stdio:x" {
		t.Fatalf("got %q", got)
	}
	cancel()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("ServeMCP after cancel = %v, want nil", err)
	}
	if fdtest.Nonblocking(t, p.InR) || fdtest.Nonblocking(t, p.OutW) {
		t.Fatal("stdio left nonblocking")
	}
}

// oldDaemon speaks protocol 1.0 in MCP mode: it ignores the hand-off
// offer, welcomes with 1.0 and echoes bytes. It reports the hello it got.
func oldDaemon(t *testing.T) (string, chan protocol.Hello) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "old.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hellos := make(chan protocol.Hello, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_, p, err := protocol.ReadFrame(nc, protocol.MaxFrame)
		var hello protocol.Hello
		if err != nil || json.Unmarshal(p, &hello) != nil {
			t.Errorf("old daemon: hello %s, %v", p, err)
			return
		}
		hellos <- hello
		if err := protocol.WriteFrame(nc, protocol.FrameWelcome, []byte(`{"proto":"1.0","version":"old","pid":1}`)); err != nil {
			t.Errorf("old daemon: %v", err)
			return
		}
		sc := bufio.NewScanner(nc)
		for sc.Scan() {
			if _, err := io.WriteString(nc, "old:"+sc.Text()+"\n"); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return sock, hellos
}

// TestServeMCPFallsBackForAnOldDaemon: the offer is made, a 1.0 daemon
// ignores it, and the session runs through the byte pipe.
func TestServeMCPFallsBackForAnOldDaemon(t *testing.T) {
	sock, hellos := oldDaemon(t)
	p := fdtest.StdioPipes(t)
	done := serve(testCtx(t), sock, client.MCPOptions{Handoff: true}, p)
	if got := roundTrip(t, p, bufio.NewReader(p.OutR), "hi"); got != "old:hi" {
		t.Fatalf("got %q", got)
	}
	if h := <-hellos; !h.Handoff || h.Proto != protocol.Version {
		t.Fatalf("hello %+v: want the hand-off offered", h)
	}
	p.InW.Close()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("ServeMCP = %v", err)
	}
}

// TestServeMCPOffersOnlyPipesAndSockets: a regular file as stdout (or a
// terminal, or anything not a pipe or socket) is not offered.
func TestServeMCPOffersOnlyPipesAndSockets(t *testing.T) {
	sock, hellos := oldDaemon(t)
	p := fdtest.StdioPipes(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	done := make(chan error, 1)
	go func() {
		done <- client.ServeMCP(testCtx(t), sock, client.MCPOptions{Handoff: true}, p.InR, out, io.Discard)
	}()
	if h := <-hellos; h.Handoff {
		t.Fatal("offered a regular file")
	}
	p.InW.Close()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("ServeMCP = %v", err)
	}
}

// TestServeMCPReportsALostDaemon: a daemon that dies during a handed-off
// session (the socket ends without FrameEnded) is an error naming it, and
// the descriptions the daemon had made nonblocking are blocking again.
func TestServeMCPReportsALostDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "dying.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		uc, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer uc.Close()
		if _, _, err := protocol.ReadFrame(uc, protocol.MaxFrame); err != nil {
			t.Errorf("hello: %v", err)
			return
		}
		if err := protocol.WriteFrame(uc, protocol.FrameWelcome, []byte(`{"proto":"1.1","pid":1,"handoff":true}`)); err != nil {
			t.Errorf("welcome: %v", err)
			return
		}
		oob := make([]byte, unix.CmsgSpace(8))
		_, oobn, _, _, err := uc.ReadMsgUnix(make([]byte, 64), oob)
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || perr != nil || len(msgs) != 1 {
			t.Errorf("stdio frame: %v %v", err, perr)
			return
		}
		fds, _ := unix.ParseUnixRights(&msgs[0])
		for _, fd := range fds { // as a daemon polling them would, then dies
			_ = unix.SetNonblock(fd, true)
			_ = unix.Close(fd)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-served })
	p := fdtest.StdioPipes(t)
	err = waitErr(t, serve(testCtx(t), sock, client.MCPOptions{Handoff: true}, p))
	if !errors.Is(err, errcode.ErrDaemonUnavailable) || !strings.Contains(err.Error(), "lost the daemon") {
		t.Fatalf("ServeMCP = %v, want the daemon reported lost", err)
	}
	if fdtest.Nonblocking(t, p.InR) || fdtest.Nonblocking(t, p.OutW) {
		t.Fatal("stdio left nonblocking")
	}
}

// TestServeMCPReportsTheDaemonsReason: FrameEnded with an error (the
// daemon shutting down) is ServeMCP's error, with the daemon's words.
func TestServeMCPReportsTheDaemonsReason(t *testing.T) {
	h := &stdioFake{fakeHandler: newFake(), handed: make(chan struct{}, 1)}
	d := startDaemon(t, h)
	p := fdtest.StdioPipes(t)
	done := serve(testCtx(t), d.sock, client.MCPOptions{Handoff: true}, p)
	<-h.handed
	d.stop(t)
	err := waitErr(t, done)
	if !errors.Is(err, errcode.ErrDaemonUnavailable) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("ServeMCP = %v, want daemon_unavailable: shutting down", err)
	}
}

// TestBridgeReportsADaemonThatClosesFirst: in the byte pipe too, the
// daemon ending the session while stdin is open is an error.
func TestBridgeReportsADaemonThatClosesFirst(t *testing.T) {
	d := startDaemon(t, newFake())
	p := fdtest.StdioPipes(t)
	done := serve(testCtx(t), d.sock, client.MCPOptions{Handoff: false}, p)
	if got := roundTrip(t, p, bufio.NewReader(p.OutR), "hi"); got != "/false:hi" {
		t.Fatalf("got %q", got)
	}
	d.stop(t)
	err := waitErr(t, done)
	if !errors.Is(err, client.ErrSessionCut) || !strings.Contains(err.Error(), d.sock) {
		t.Fatalf("ServeMCP = %v, want ErrSessionCut naming the socket", err)
	}
}

func TestHandoffEnabled(t *testing.T) {
	for v, want := range map[string]bool{"": true, "1": true, "yes": true, "0": false, "false": false, " OFF ": false, "no": false} {
		if got := client.HandoffEnabled(v); got != want {
			t.Errorf("HandoffEnabled(%q) = %t, want %t", v, got, want)
		}
	}
}
