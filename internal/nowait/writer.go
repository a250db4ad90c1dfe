package nowait

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// Writer writes a stream's descriptor with Write, parking in the
// runtime's poller while the peer's buffer is full, as an *os.File or
// net.Conn does. Where the descriptor cannot be written without waiting,
// and after any error of the poller, it writes through the stream
// itself. One goroutine writes at a time.
type Writer struct {
	rc     syscall.RawConn
	stream io.Writer
	usual  bool

	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// NewWriter writes w's descriptor without waiting when w has one (an
// *os.File, a net.Conn); otherwise it returns w.
func NewWriter(w io.Writer) io.Writer {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return w
	}
	rc, err := sc.SyscallConn()
	if err != nil || rc == nil {
		return w
	}
	nw := &Writer{rc: rc, stream: w}
	nw.fn = nw.writeFD
	return nw
}

// Write implements io.Writer: all of p, or an error.
func (w *Writer) Write(p []byte) (int, error) {
	if w.usual {
		return w.stream.Write(p)
	}
	w.p, w.n, w.err = p, 0, nil
	perr := w.rc.Write(w.fn)
	n, err := w.n, w.err
	w.p, w.err = nil, nil
	switch {
	case perr != nil:
		m, err := w.stream.Write(p[n:])
		return n + m, err
	case err == ErrUnsupported:
		w.usual = true
		m, err := w.stream.Write(p[n:])
		return n + m, err
	}
	return n, err
}

// writeFD is the poller's callback: false parks until the descriptor is
// writable.
func (w *Writer) writeFD(fd uintptr) bool {
	for w.n < len(w.p) {
		m, err := Write(fd, w.p[w.n:])
		switch {
		case err == unix.EAGAIN:
			return false
		case err != nil:
			w.err = err
			return true
		case m == 0:
			w.err = io.ErrUnexpectedEOF // as poll.FD.Write says of a write that took nothing
			return true
		}
		w.n += m
	}
	return true
}
