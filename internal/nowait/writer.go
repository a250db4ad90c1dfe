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
	m, err := WriteNow(fd, w.p[w.n:], false)
	w.n += m
	if err == unix.EAGAIN {
		return false
	}
	w.err = err
	return true
}

// WriteNow writes p to fd until all of it is written, nothing more fits
// now (unix.EAGAIN), or an error, and returns what it wrote. It writes
// with Write, so a descriptor that cannot take RWF_NOWAIT gives
// ErrUnsupported; plain writes with write(2) instead, for such a
// descriptor in non-blocking mode. A write that takes nothing is
// io.ErrUnexpectedEOF, as poll.FD.Write says.
func WriteNow(fd uintptr, p []byte, plain bool) (int, error) {
	n := 0
	for n < len(p) {
		var m int
		var err error
		if plain {
			if m, err = unix.Write(int(fd), p[n:]); err == unix.EINTR {
				continue
			}
		} else {
			m, err = Write(fd, p[n:]) // it retries EINTR itself
		}
		switch {
		case err != nil:
			return n, err
		case m <= 0:
			return n, io.ErrUnexpectedEOF
		}
		n += m
	}
	return n, nil
}
