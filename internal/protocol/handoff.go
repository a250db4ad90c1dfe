package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// The stdio hand-off (protocol 1.1) takes `harness mcp` out of the data
// path. A client in MCP mode whose stdin and stdout are pipes or sockets
// offers them (Hello.Handoff). A daemon whose Handler is an MCPStdioServer
// accepts (Welcome.Handoff); the client then sends one FrameStdio whose
// ancillary data (SCM_RIGHTS) carries its stdin and stdout, and the daemon
// serves the MCP session directly on them. From then on the socket carries
// only the end of the session: the daemon sends FrameEnded once the session
// is over and it has released the descriptors; the client half-closes its
// side to end the session early (a signal to `harness mcp`). A 1.0 daemon
// ignores the offer, and a daemon never accepts one that was not made, so
// either side of a version skew keeps the byte stream.

// MCPStdioServer is an optional Handler capability: serving an MCP session
// on a client's own stdin and stdout, passed over the socket.
type MCPStdioServer interface {
	// ServeMCPStdio serves one session on stdio (reads are the client's
	// stdin, writes its stdout) until the client's stdin ends and its calls
	// are answered (nil) or ctx ends: the client left or asked to stop, or
	// the server shuts down. A non-nil error tells the client why the
	// session ended early. The server closes stdio afterwards either way.
	ServeMCPStdio(ctx context.Context, stdio io.ReadWriteCloser, hello Hello) error
}

// StdioFrame is the payload of FrameStdio: what the passed descriptors
// are, in order. A client sends exactly StdioNames.
type StdioFrame struct {
	FDs []string `json:"fds"`
}

// StdioNames are the descriptors a FrameStdio carries, in order.
var StdioNames = []string{"stdin", "stdout"}

// Ended is the payload of FrameEnded. Error is set when the session ended
// for a reason the client should report (the daemon shutting down, a token
// revoked, descriptors refused); nil when the client's stdin ended and
// every call was answered, or the client asked to stop.
type Ended struct {
	Error *errcode.Body `json:"error,omitempty"`
}

// maxPassedFDs is how many descriptors a FrameStdio's ancillary data is
// read for: two are expected, room for more lets extra ones be seen (and
// closed) instead of being dropped by the kernel unnoticed.
const maxPassedFDs = 8

// Passable reports whether f can be handed to the daemon: a pipe or a
// socket. A terminal, a regular file or /dev/null is served through the
// byte stream. It does not change f's blocking mode (os.File.Fd would).
func Passable(f *os.File) bool {
	if f == nil {
		return false
	}
	ok := false
	if err := WithFD(f, func(fd int) { ok = pipeOrSocket(fd) }); err != nil {
		return false
	}
	return ok
}

func pipeOrSocket(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	kind := st.Mode & unix.S_IFMT
	return kind == unix.S_IFIFO || kind == unix.S_IFSOCK
}

// SendStdio sends the FrameStdio that hands stdin and stdout to the daemon,
// after a Welcome that accepted the hand-off.
func SendStdio(conn *net.UnixConn, stdin, stdout *os.File) error {
	payload, err := json.Marshal(StdioFrame{FDs: StdioNames})
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", FrameStdio, err)
	}
	frame, err := AppendFrame(nil, FrameStdio, payload)
	if err != nil {
		return err
	}
	var outErr, sendErr error
	err = WithFD(stdin, func(in int) {
		outErr = WithFD(stdout, func(out int) {
			var n, oobn int
			n, oobn, sendErr = conn.WriteMsgUnix(frame, unix.UnixRights(in, out), nil)
			if sendErr == nil && (n != len(frame) || oobn == 0) {
				sendErr = fmt.Errorf("short write (%d of %d bytes, %d of ancillary data)", n, len(frame), oobn)
			}
		})
	})
	if err = errors.Join(err, outErr, sendErr); err != nil {
		return fmt.Errorf("send %s frame: %w", FrameStdio, err)
	}
	return nil
}

// WithFD runs fn with f's descriptor, without os.File.Fd's side effect of
// making a pollable file blocking.
func WithFD(f *os.File, fn func(fd int)) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(func(fd uintptr) { fn(int(fd)) })
}

// receiveStdio reads the FrameStdio that follows a Welcome accepting the
// hand-off, and returns the client's stdio ready to serve. Every
// descriptor received is either in the result or closed. A refusal is an
// errcode error for the Ended frame.
func (c *conn) receiveStdio(ctx context.Context) (*handedStdio, error) {
	uc, ok := c.nc.(*net.UnixConn)
	if !ok {
		return nil, errcode.Errorf(errcode.Internal, "stdio hand-off on a %T: want a unix socket", c.nc)
	}
	timeout := orDefault(c.s.HandshakeTimeout, DefaultHandshakeTimeout)
	if err := uc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("stdio hand-off: set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = uc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	var head [5]byte
	oob := make([]byte, unix.CmsgSpace(maxPassedFDs*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(head[:], oob)
	fds := rightsIn(oob[:oobn])
	keep := false
	defer func() {
		if !keep {
			closeFDs(fds)
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("stdio hand-off: read %s frame: %w", FrameStdio, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("stdio hand-off: read %s frame: %w", FrameStdio, io.ErrUnexpectedEOF)
	}
	t, payload, err := ReadFrame(io.MultiReader(bytes.NewReader(head[:n]), uc), c.s.maxFrame())
	if err != nil {
		return nil, errcode.Errorf(errcode.InvalidArgument, "stdio hand-off: read %s frame: %v", FrameStdio, err)
	}
	if err := uc.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("stdio hand-off: clear deadline: %w", err)
	}
	var sf StdioFrame
	switch {
	case t != FrameStdio:
		return nil, errcode.Errorf(errcode.InvalidArgument, "stdio hand-off: got a %s frame, want %s", t, FrameStdio)
	case json.Unmarshal(payload, &sf) != nil || len(sf.FDs) != len(StdioNames) || sf.FDs[0] != StdioNames[0] || sf.FDs[1] != StdioNames[1]:
		return nil, errcode.Errorf(errcode.InvalidArgument, "stdio hand-off: %s frame names %.80q, want %q", FrameStdio, payload, StdioNames)
	case flags&unix.MSG_CTRUNC != 0 || len(fds) != len(StdioNames):
		return nil, errcode.Errorf(errcode.InvalidArgument, "stdio hand-off: %d descriptors passed (truncated: %t), want %d",
			len(fds), flags&unix.MSG_CTRUNC != 0, len(StdioNames))
	}
	for i, fd := range fds {
		if !pipeOrSocket(fd) {
			return nil, errcode.Errorf(errcode.InvalidArgument, "stdio hand-off: %s is not a pipe or a socket", StdioNames[i])
		}
	}
	stdio, err := newHandedStdio(fds[0], fds[1])
	if err != nil {
		return nil, err
	}
	keep = true // the handedStdio owns them now
	return stdio, nil
}

// rightsIn returns the descriptors of every SCM_RIGHTS message in oob.
func rightsIn(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// handedStdio is a client's stdin and stdout as the daemon serves a session
// on them. The open file descriptions are shared with the client (and its
// parent), so their blocking mode is the client's: each stream is read or
// written through a poller-backed duplicate, with O_NONBLOCK set on the
// description only if it was not set already, and Close puts back the mode
// it found, through the received descriptor, once the duplicates are
// closed (no read or write on them can be in progress then).
type handedStdio struct {
	in, out   *os.File // poller-backed duplicates
	raw       [2]int   // the received descriptors: stdin, stdout
	setByUs   [2]bool  // O_NONBLOCK was clear: Close clears it again
	closeOnce sync.Once
	closeErr  error
}

// newHandedStdio takes ownership of in and out when it succeeds; on
// failure they are left to the caller, their modes as they were.
func newHandedStdio(in, out int) (*handedStdio, error) {
	s := &handedStdio{raw: [2]int{in, out}}
	// Every mode is read before any is set: stdin and stdout may be one
	// description, whose flag the first set would change for the second.
	for i, fd := range s.raw {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return nil, fmt.Errorf("stdio hand-off: %s: read mode: %w", StdioNames[i], err)
		}
		s.setByUs[i] = flags&unix.O_NONBLOCK == 0
	}
	var files [2]*os.File
	for i, fd := range s.raw {
		// F_DUPFD_CLOEXEC: a child the daemon forks meanwhile must not
		// inherit the client's stdio (its EOF would never come). At 3 or
		// above: os treats a file on 1 or 2 as the process's own stdout,
		// where EPIPE (the client gone) raises SIGPIPE.
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err == nil {
			if err = unix.SetNonblock(dup, true); err != nil {
				_ = unix.Close(dup)
			}
		}
		if err != nil {
			for _, f := range files[:i] {
				_ = f.Close()
			}
			if rerr := s.restore(); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return nil, fmt.Errorf("stdio hand-off: %s: %w", StdioNames[i], err)
		}
		files[i] = os.NewFile(uintptr(dup), "client-"+StdioNames[i]) // nonblocking: polled
	}
	s.in, s.out = files[0], files[1]
	return s, nil
}

// Read reads the client's stdin.
func (s *handedStdio) Read(p []byte) (int, error) { return s.in.Read(p) }

// Write writes the client's stdout.
func (s *handedStdio) Write(p []byte) (int, error) { return s.out.Write(p) }

// SyscallConn is the writing side's (the client's stdout): the session
// asks it whether the client still reads its answers.
func (s *handedStdio) SyscallConn() (syscall.RawConn, error) { return s.out.SyscallConn() }

// ReadConn is the reading side's (the client's stdin), for reads that
// never wait (internal/nowait).
func (s *handedStdio) ReadConn() (syscall.RawConn, error) { return s.in.SyscallConn() }

// Close ends any read or write in progress, puts back the blocking mode of
// both descriptions and releases every descriptor. It is safe to call more
// than once and from any goroutine; later calls return the first's error.
func (s *handedStdio) Close() error {
	s.closeOnce.Do(func() {
		// Closing a polled file wakes a parked reader or writer and
		// waits until none is inside a system call on it.
		errIn, errOut := s.in.Close(), s.out.Close()
		errMode := s.restore()
		var errClose error
		for i, fd := range s.raw {
			if err := unix.Close(fd); err != nil {
				errClose = errors.Join(errClose, fmt.Errorf("close the client's %s: %w", StdioNames[i], err))
			}
		}
		s.closeErr = errors.Join(errIn, errOut, errMode, errClose)
	})
	return s.closeErr
}

// restore clears O_NONBLOCK where it was clear when received, through the
// received descriptors.
func (s *handedStdio) restore() error {
	var errs []error
	for i, fd := range s.raw {
		if s.setByUs[i] {
			if err := unix.SetNonblock(fd, false); err != nil {
				errs = append(errs, fmt.Errorf("restore blocking mode of the client's %s: %w", StdioNames[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// errClientLeft is the cause of a handed-off session's end when the client
// half-closed or closed the socket: it asked to stop, or it is gone.
var errClientLeft = errors.New("protocol: the client ended the stdio hand-off")

// serveStdio runs a connection whose client handed its stdio over: receive
// the descriptors, serve the session on them while watching the socket for
// the client's end, release the descriptors, then send FrameEnded.
func (c *conn) serveStdio(ctx context.Context, srv MCPStdioServer) {
	log := c.s.logger()
	stdio, err := c.receiveStdio(ctx)
	if err != nil {
		log.Info("protocol: stdio hand-off refused", logkey.Conn, c.id, logkey.Client, c.hello.Client, logkey.Err, err)
		c.end(c.shutdownOr(ctx, err))
		return
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// The client sends nothing after FrameStdio: any read result (its
		// half-close, its exit, or stray bytes) is its end of the session.
		var b [1]byte
		_, _ = c.nc.Read(b[:])
		cancel(errClientLeft)
	}()
	err = c.runStdio(sctx, srv, stdio)
	if cerr := stdio.Close(); cerr != nil {
		log.Warn("protocol: release handed-off stdio", logkey.Conn, c.id, logkey.Client, c.hello.Client, logkey.Err, cerr)
	}
	switch {
	case errors.Is(context.Cause(sctx), errClientLeft):
		err = nil // it asked, or it cannot hear the answer
	case err != nil || ctx.Err() != nil:
		err = c.shutdownOr(ctx, err)
	}
	if err != nil {
		log.Debug("protocol: handed-off session ended early", logkey.Conn, c.id, logkey.Client, c.hello.Client, logkey.Err, err)
	}
	c.end(err)
	c.close()
	<-watched
}

// runStdio calls the handler, turning a panic into an error for the client.
func (c *conn) runStdio(ctx context.Context, srv MCPStdioServer, stdio io.ReadWriteCloser) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.logger().Error("protocol: MCP stdio handler panicked", logkey.Conn, c.id,
				logkey.Client, c.hello.Client, logkey.Panic, r, logkey.Stack, string(debug.Stack()))
			err = errcode.Errorf(errcode.Internal, "the daemon's session handler failed: %v", r)
		}
	}()
	return srv.ServeMCPStdio(ctx, stdio, c.hello)
}

// shutdownOr is err, unless the server is shutting down, which is then
// the reason to give.
func (c *conn) shutdownOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errcode.Errorf(errcode.DaemonUnavailable, "the daemon is shutting down")
	}
	return err
}

// end sends FrameEnded with why the session ended (nil: a normal end).
func (c *conn) end(why error) {
	var e Ended
	if why != nil {
		body := errcode.BodyOf(why)
		e.Error = &body
	}
	payload, err := json.Marshal(e)
	if err != nil {
		c.s.logger().Error("protocol: encode ended frame", logkey.Err, err)
		return
	}
	if err := c.write(FrameEnded, payload); err != nil {
		c.s.logger().Debug("protocol: ended frame not delivered", logkey.Conn, c.id, logkey.Err, err)
	}
}
