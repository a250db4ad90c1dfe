package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fdtest"
)

// bridgeRig is what `harness mcp` runs between: blocking stdio pipes, as a
// parent hands them over, and a connected socket pair whose second end
// plays the daemon.
type bridgeRig struct {
	inR, inW, outR, outW *os.File
	conn, daemon         net.Conn
}

func newBridgeRig(t *testing.T) *bridgeRig {
	t.Helper()
	p := fdtest.StdioPipes(t)
	r := bridgeRig{inR: p.InR, inW: p.InW, outR: p.OutR, outW: p.OutW}
	r.conn, r.daemon = fdtest.SocketPair(t)
	return &r
}

// TestBridgeCopiesBothWaysAndRestoresBlockingStdio runs Bridge on real
// pipes, as `harness mcp` gets them from an agent: bytes flow both ways,
// stdin's end half-closes the stream, and the pipes are blocking again
// afterwards (their open file descriptions are shared with the parent).
func TestBridgeCopiesBothWaysAndRestoresBlockingStdio(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2") // keep the test binary's own setting
	r := newBridgeRig(t)
	inR, inW, outR, outW, daemonSide := r.inR, r.inW, r.outR, r.outW, r.daemon
	// The daemon side echoes each line upper-cased until it sees EOF, then
	// sends a last line and closes: the bridge must deliver it.
	go func() {
		sc := bufio.NewScanner(daemonSide)
		for sc.Scan() {
			_, _ = daemonSide.Write(append(bytes.ToUpper(sc.Bytes()), '\n'))
		}
		_, _ = daemonSide.Write([]byte("BYE\n"))
		_ = daemonSide.Close()
	}()
	done := make(chan error, 1)
	var errw bytes.Buffer
	go func() { done <- Bridge(context.Background(), r.conn, inR, outW, &errw) }()

	rd := bufio.NewReader(outR)
	for _, msg := range []string{"one", "two"} {
		if _, err := inW.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		_ = outR.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the bridge's stdout: %v", err)
		}
		if want := string(bytes.ToUpper([]byte(msg))) + "\n"; line != want {
			t.Fatalf("got %q, want %q", line, want)
		}
	}
	if !fdtest.Nonblocking(t, inR) || !fdtest.Nonblocking(t, outW) {
		t.Fatal("the bridge does not read and write stdio through the poller")
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Bridge = %v (stderr %q)", err, errw.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Bridge did not return after stdin ended and the daemon closed")
	}
	if fdtest.Nonblocking(t, inR) || fdtest.Nonblocking(t, outW) {
		t.Fatal("stdio left nonblocking")
	}
	r.conn.Close()
	outW.Close()
	if rest, _ := io.ReadAll(rd); string(rest) != "BYE\n" {
		t.Fatalf("after stdin ended got %q, want the daemon's last line", rest)
	}
}

// TestPollableLeavesFilesAndPreSetModesAlone: a regular file is used as
// it is, and a pipe someone already made nonblocking stays nonblocking.
func TestPollableLeavesFilesAndPreSetModesAlone(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, p := pollable(f)
	p.restore()
	if got != f || p != nil {
		t.Fatal("a regular file was replaced")
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// os.Pipe files are nonblocking already.
	if !fdtest.Nonblocking(t, r) {
		t.Fatal("os.Pipe gave a blocking pipe")
	}
	got, p = pollable(r)
	if p == nil || got == r {
		t.Fatal("a nonblocking pipe was not polled")
	}
	p.restore()
	if !fdtest.Nonblocking(t, r) {
		t.Fatal("restore made a pipe blocking that was nonblocking before")
	}

	var buf bytes.Buffer
	if gotW, pw := pollable(io.Writer(&buf)); gotW != io.Writer(&buf) || pw != nil {
		t.Fatal("a non-file writer was replaced")
	}
}

// TestBridgeEndsWhenTheDaemonClosesFirst: the daemon ends the stream
// while stdin is still open (shutdown, crash, revoked token). Bridge
// returns ErrSessionCut (the client lost its server) without a
// spurious stdin error, its stdin reader is done (goleak checks in
// TestMain), and stdin is blocking again.
func TestBridgeEndsWhenTheDaemonClosesFirst(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	r := newBridgeRig(t)
	var errw bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Bridge(context.Background(), r.conn, r.inR, r.outW, &errw) }()
	if _, err := r.daemon.Write([]byte("bye\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r.outR).ReadString('\n')
	if err != nil || line != "bye\n" {
		t.Fatalf("stdout got %q, %v", line, err)
	}
	r.daemon.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrSessionCut) {
			t.Fatalf("Bridge = %v, want ErrSessionCut", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Bridge did not return after the daemon closed")
	}
	if errw.Len() != 0 {
		t.Fatalf("stderr = %q, want nothing", errw.String())
	}
	if fdtest.Nonblocking(t, r.inR) || fdtest.Nonblocking(t, r.outW) {
		t.Fatal("stdio left nonblocking")
	}
}

// TestBridgeOnOneSocketForStdinAndStdout: stdin and stdout are one socket
// (socat EXEC:, inetd): both ends are polled, so a stalled reader parks
// the writer instead of spinning, and the description is blocking again
// afterwards. Cancelling the context ends the bridge like a signal does.
func TestBridgeOnOneSocketForStdinAndStdout(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	r := newBridgeRig(t)
	agent, stdio := fdtest.SocketPairFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Bridge(ctx, r.conn, stdio, stdio, io.Discard) }()
	if _, err := agent.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r.daemon).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("daemon got %q, %v", line, err)
	}
	if _, err := r.daemon.Write([]byte("pong\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(agent).ReadString('\n'); err != nil || line != "pong\n" {
		t.Fatalf("agent got %q, %v", line, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Bridge after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Bridge did not return after its context ended")
	}
	if fdtest.Nonblocking(t, stdio) {
		t.Fatal("the shared socket was left nonblocking")
	}
}
