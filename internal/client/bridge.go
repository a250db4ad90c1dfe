package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/hangup"
)

// ErrSessionCut is returned by Bridge when the daemon closed the stream
// before in ended: the daemon stopped or crashed (or refused the session
// after the handshake), and the client lost its server.
var ErrSessionCut = fmt.Errorf("the daemon closed the session before stdin ended (it stopped or crashed): %w", errcode.ErrDaemonUnavailable)

// Bridge copies bytes both ways between an MCP stream from DialMCP and a
// local reader/writer pair (the stdio of `harness mcp`). It returns when
// the daemon closes the stream, when in ends and the daemon has answered
// what it was sent (the stream is half-closed so it can), or when ctx ends
// (nil: being told to stop is not a failure). The daemon closing first,
// while in is still open, is ErrSessionCut. An error reading in is
// reported to errw and ends only that direction.
//
// Bridge sits on every MCP message of a bridged session, twice, so it is
// built for low CPU per message: when in and out are pipes or sockets it
// reads and writes them through the runtime's poller (nonblocking; their
// blocking mode is restored before it returns), and one P runs it unless
// GOMAXPROCS is set. Both are measured in docs/benchmarks.md.
func Bridge(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer, errw io.Writer) error {
	if os.Getenv("GOMAXPROCS") == "" {
		// Two goroutines copying bytes need one P; more let idle Ps spin
		// looking for work at every wakeup, which costs more CPU than the
		// copying.
		runtime.GOMAXPROCS(1)
	}
	in, pin := pollable(in)
	defer pin.restore()
	out, pout := pollable(out)
	defer pout.restore()

	// Cancelling ctx (the agent's SIGTERM, say) closes the stream, which
	// ends Bridge the usual way, so the blocking mode still goes back.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	fromDaemon := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, conn)
		fromDaemon <- err
	}()
	toDaemon := make(chan struct{})
	var inEnded atomic.Bool // set before the daemon can see our EOF
	go func() {
		defer close(toDaemon)
		_, err := io.Copy(conn, in)
		if err != nil && !errors.Is(err, os.ErrClosed) { // ErrClosed: Bridge is returning
			fmt.Fprintln(errw, "harness mcp: stdin:", err)
		}
		inEnded.Store(true)
		// Half-close so the daemon sees EOF but can still flush answers.
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		} else {
			_ = conn.Close()
		}
	}()
	// A client that closed its stdout too is gone: say so to the daemon by
	// closing the stream, so it cancels the calls it still runs for us
	// rather than hold them for answers nobody will read.
	defer hangup.Watch(out, func() { _ = conn.Close() })()
	err := <-fromDaemon
	cut := !inEnded.Load() // before closing stdin ends its copy below
	pout.close()
	if pin != nil {
		// Closing the poller-backed stdin ends a read parked on it, so the
		// copy above is over before the blocking mode goes back. (A stdin
		// that is not polled, a terminal say, keeps its reader blocked
		// until the process exits, as any blocking read would.)
		pin.close()
		<-toDaemon
	}
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil && !errors.Is(err, net.ErrClosed):
		return fmt.Errorf("connection to daemon: %w", err)
	case cut:
		return ErrSessionCut
	}
	return nil
}

// polled is a poller-backed duplicate of a pipe or socket: O_NONBLOCK is
// set on the open file description, which the original shares.
type polled struct {
	dup, orig *os.File
	setByUs   bool // the description was blocking before: restore clears O_NONBLOCK
}

// close closes the duplicate: a read or write parked on it returns
// os.ErrClosed. The nil polled does nothing.
func (p *polled) close() {
	if p != nil {
		_ = p.dup.Close()
	}
}

// restore closes the duplicate and puts the description back into
// blocking mode (through the original, so it works once the duplicate is
// closed): a shell or parent sharing it must not inherit the change. Call
// it after every reader and writer of the duplicate is done. The nil
// polled does nothing.
func (p *polled) restore() {
	if p == nil {
		return
	}
	p.close()
	if !p.setByUs {
		return
	}
	if raw, err := p.orig.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
	}
}

// pollable returns a poller-backed duplicate of f when f is an *os.File on
// a pipe or a socket, so that waiting on it parks a goroutine instead of
// holding a thread in a blocking read. A description that is nonblocking
// already (someone else's choice, or stdin and stdout being one socket) is
// polled too, and left nonblocking by restore. Anything else (a terminal,
// a regular file, a non-file) is returned as it is, with a nil *polled.
func pollable[T any](f T) (T, *polled) {
	file, ok := any(f).(*os.File)
	if !ok || file == nil {
		return f, nil
	}
	// SyscallConn, not Fd: Fd would switch a nonblocking file to blocking.
	raw, err := file.SyscallConn()
	if err != nil {
		return f, nil
	}
	fd, wasBlocking := -1, false
	cerr := raw.Control(func(orig uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(orig), &st) != nil {
			return
		}
		if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
			return
		}
		flags, err := unix.FcntlInt(orig, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		wasBlocking = flags&unix.O_NONBLOCK == 0
		fd, _ = syscall.Dup(int(orig))
	})
	if cerr != nil || fd < 0 {
		return f, nil
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, nil
	}
	p := &polled{dup: os.NewFile(uintptr(fd), file.Name()), orig: file, setByUs: wasBlocking} // nonblocking: registered with the poller
	t, ok := any(p.dup).(T)
	if !ok {
		p.restore()
		return f, nil
	}
	return t, p
}
