package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bridge copies bytes both ways between an MCP stream from DialMCP and a
// local reader/writer pair (the stdio of `harness mcp`). It returns when
// the daemon closes the stream, or when in ends and the daemon has
// answered what it was sent (the stream is half-closed so it can). Errors
// reading in are reported to errw and end only that direction.
//
// Bridge sits on every MCP message of a bridged session, twice, so it is
// built for low CPU per message: when in and out are pipes or sockets it
// reads and writes them through the runtime's poller (nonblocking; their
// blocking mode is restored before it returns), and one P runs it unless
// GOMAXPROCS is set. Both are measured in docs/benchmarks.md.
func Bridge(conn net.Conn, in io.Reader, out io.Writer, errw io.Writer) error {
	if os.Getenv("GOMAXPROCS") == "" {
		// Two goroutines copying bytes need one P; more let idle Ps spin
		// looking for work at every wakeup, which costs more CPU than the
		// copying.
		runtime.GOMAXPROCS(1)
	}
	in, restoreIn := pollable(in)
	defer restoreIn()
	out, restoreOut := pollable(out)
	defer restoreOut()

	fromDaemon := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, conn)
		fromDaemon <- err
	}()
	go func() {
		_, err := io.Copy(conn, in)
		if err != nil {
			fmt.Fprintln(errw, "harness mcp: stdin:", err)
		}
		// Half-close so the daemon sees EOF but can still flush answers.
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		} else {
			_ = conn.Close()
		}
	}()
	if err := <-fromDaemon; err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("connection to daemon: %w", err)
	}
	return nil
}

// pollable returns a poller-backed duplicate of f when f is an *os.File on
// a pipe or a socket, so that waiting on it parks a goroutine instead of
// holding a thread in a blocking read. O_NONBLOCK belongs to the open file
// description, which the duplicate shares, so restore puts the blocking
// mode back (a shell or parent sharing it must not inherit the change).
// Anything else is returned as it is.
func pollable[T any](f T) (T, func()) {
	file, ok := any(f).(*os.File)
	if !ok || file == nil {
		return f, func() {}
	}
	// SyscallConn, not Fd: Fd would switch a nonblocking file to blocking.
	raw, err := file.SyscallConn()
	if err != nil {
		return f, func() {}
	}
	fd := -1
	var st syscall.Stat_t
	cerr := raw.Control(func(orig uintptr) {
		if syscall.Fstat(int(orig), &st) != nil {
			return
		}
		if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
			return
		}
		fd, _ = syscall.Dup(int(orig))
	})
	if cerr != nil || fd < 0 {
		return f, func() {}
	}
	syscall.CloseOnExec(fd)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		// Already nonblocking: someone else manages the mode; leave it.
		_ = syscall.Close(fd)
		return f, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, func() {}
	}
	dup := os.NewFile(uintptr(fd), file.Name()) // nonblocking: registered with the poller
	p, ok := any(dup).(T)
	if !ok {
		_ = syscall.SetNonblock(fd, false)
		_ = dup.Close()
		return f, func() {}
	}
	return p, func() {
		if rc, err := dup.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
		}
		_ = dup.Close()
	}
}
