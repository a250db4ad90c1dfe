package nowait

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reader reads a stream's descriptor with Read, parking in the runtime's
// poller while there is nothing to read, as an *os.File or net.Conn does.
// Where the descriptor cannot be read without waiting, and after any
// error of the poller (the stream closed, a deadline), it reads through
// the stream itself, which reports the error as it always does. One
// goroutine reads at a time.
type Reader struct {
	rc     syscall.RawConn
	stream io.Reader
	usual  bool // read through stream from now on

	// The read in progress, for fn (made once: no allocation per read).
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// rawReader is a stream whose descriptor for reading is not the one
// SyscallConn returns (a handed-off stdio pair answers SyscallConn with
// its writing side).
type rawReader interface {
	ReadConn() (syscall.RawConn, error)
}

// NewReader reads r's descriptor without waiting when r has one (an
// *os.File, a net.Conn, or a ReadConn method); otherwise it returns r.
func NewReader(r io.Reader) io.Reader {
	var rc syscall.RawConn
	var err error
	switch s := r.(type) {
	case rawReader:
		rc, err = s.ReadConn()
	case syscall.Conn:
		rc, err = s.SyscallConn()
	default:
		return r
	}
	if err != nil || rc == nil {
		return r
	}
	nr := &Reader{rc: rc, stream: r}
	nr.fn = nr.readFD
	return nr
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.usual || len(p) == 0 {
		return r.stream.Read(p)
	}
	r.p, r.n, r.err = p, 0, nil
	perr := r.rc.Read(r.fn)
	n, err := r.n, r.err
	r.p, r.err = nil, nil
	switch {
	case perr != nil:
		// Closed, or past a deadline: the stream says so its own way.
		return r.stream.Read(p)
	case err == ErrUnsupported:
		r.usual = true
		return r.stream.Read(p)
	case err != nil:
		return n, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readFD is the poller's callback: false parks until the descriptor is
// readable.
func (r *Reader) readFD(fd uintptr) bool {
	n, err := Read(fd, r.p)
	if err == unix.EAGAIN {
		return false
	}
	r.n, r.err = n, err
	return true
}
