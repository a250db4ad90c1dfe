// Package fdtest holds test helpers for file descriptors: socket pairs as
// a parent hands them to a child, and the O_NONBLOCK flag of an open file
// description, read and set without the side effect of os.File.Fd (which
// puts a pollable file into blocking mode).
package fdtest

import (
	"net"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// SocketPairFiles returns a connected pair of unix stream sockets as
// blocking *os.File ends, closed when the test ends.
func SocketPairFiles(t testing.TB) (*os.File, *os.File) {
	t.Helper()
	fds, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "socketpair-a"), os.NewFile(uintptr(fds[1]), "socketpair-b")
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// SocketPair returns a connected pair of unix stream sockets as net.Conns,
// closed when the test ends. Unlike net.Pipe, a write does not wait for
// the peer to read; closing one end is EOF for the other.
func SocketPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f) // a duplicate of fd ...
		_ = f.Close()             // ... so that the conn is the socket's only descriptor
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { _ = c.Close() })
	}
	return conns[0], conns[1]
}

// Nonblocking reports whether f's open file description has O_NONBLOCK.
func Nonblocking(t testing.TB, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if cerr := raw.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// SetBlocking clears O_NONBLOCK on each file's description, as a parent
// process hands a pipe to its child.
func SetBlocking(t testing.TB, files ...*os.File) {
	t.Helper()
	for _, f := range files {
		raw, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if cerr := raw.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), false) }); cerr != nil || err != nil {
			t.Fatal(cerr, err)
		}
	}
}

// Stdio is a child's stdin and stdout pipes as a parent hands them over:
// the child's ends (InR, OutW) blocking, the parent's ends (InW, OutR)
// as os.Pipe makes them.
type Stdio struct {
	InR, InW, OutR, OutW *os.File
}

// StdioPipes returns a child's stdio pipes, all four ends closed when the
// test ends.
func StdioPipes(t testing.TB) *Stdio {
	t.Helper()
	var s Stdio
	var err error
	if s.InR, s.InW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	if s.OutR, s.OutW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{s.InR, s.InW, s.OutR, s.OutW} {
			_ = f.Close()
		}
	})
	SetBlocking(t, s.InR, s.OutW)
	return &s
}
