package jsonl

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/nowait"
)

// Writes that never wait. The tools/call fast path answers a
// call on whichever goroutine ends it, often the reader of an upstream
// that many sessions share, and forwards a call upstream on a session's
// reader. Neither may wait for a peer that does not read: a stuck client
// would stall every session's answers from that upstream, and a stuck
// upstream the session's other requests. So a message is written at once
// when the connection's write lock is free and the peer's buffer has room
// for all of it, in one non-blocking write; whatever cannot be written so
// is written by a goroutine of its own, which waits as Write does.
// Messages never interleave: every write holds writeMu.

// rawWriter is w's descriptor for non-blocking writes, or nil when w has
// none or its descriptor is in blocking mode (a write on it could wait).
func rawWriter(w io.Writer) syscall.RawConn {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nonblock := false
	cerr := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && flags&unix.O_NONBLOCK != 0
	})
	if cerr != nil || !nonblock {
		return nil
	}
	return rc
}

// send writes msg (one message and its newline) without waiting and calls
// finish with the write's error once it is written or has failed: on this
// goroutine when the write was done at once, on a goroutine of its own
// otherwise. Messages sent go out in the order send was called (a call's
// cancellation never overtakes the call). msg must not change until finish
// runs.
func (c *Conn) send(msg []byte, finish func(error)) {
	c.outMu.Lock()
	if c.draining {
		c.out = append(c.out, pendingWrite{msg, finish}) // behind those queued before it
		c.outMu.Unlock()
		return
	}
	if c.rawW != nil && c.writeMu.TryLock() {
		// A send after this one finds the write lock taken and queues
		// behind it, whatever happens here.
		c.outMu.Unlock()
		n, err := c.writeNow(msg)
		if err != nil || n == len(msg) {
			c.writeMu.Unlock()
			finish(err)
			return
		}
		// The peer's buffer is full: the rest waits, the lock with it.
		go func() {
			_, err := c.ww.Write(msg[n:])
			c.writeMu.Unlock()
			finish(err)
		}()
		return
	}
	c.draining = true
	c.out = append(c.out, pendingWrite{msg, finish})
	c.outMu.Unlock()
	go c.drain()
}

// pendingWrite is a message send queued.
type pendingWrite struct {
	msg    []byte
	finish func(error)
}

// drain writes the queued messages in order, waiting as Write does, until
// none is left.
func (c *Conn) drain() {
	for {
		c.outMu.Lock()
		if len(c.out) == 0 {
			c.out, c.draining = nil, false
			c.outMu.Unlock()
			return
		}
		p := c.out[0]
		c.out[0] = pendingWrite{}
		c.out = c.out[1:]
		c.outMu.Unlock()
		c.writeMu.Lock()
		_, err := c.ww.Write(p.msg)
		c.writeMu.Unlock()
		p.finish(err)
	}
}

// writeNow writes as much of msg as the descriptor takes without waiting.
// Called with writeMu held, which also guards the raw* fields: the write
// function is made once per connection (rawWrite), not per message.
func (c *Conn) writeNow(msg []byte) (int, error) {
	c.rawMsg, c.rawN, c.rawErr = msg, 0, nil
	err := c.rawW.Write(c.rawFn)
	n, werr := c.rawN, c.rawErr
	c.rawMsg, c.rawErr = nil, nil
	if werr == nil {
		werr = err
	}
	return n, werr
}

// rawWrite is writeNow's work on the descriptor: write until done, full
// (the rest is send's goroutine's) or failed. It never asks to wait.
func (c *Conn) rawWrite(fd uintptr) bool {
	m, err := nowait.WriteNow(fd, c.rawMsg[c.rawN:], c.rawUsual)
	c.rawN += m
	if err == nowait.ErrUnsupported {
		// Remembered, as nowait.Writer does: no failed call per message.
		// The descriptor is in non-blocking mode, so write(2) never waits.
		c.rawUsual = true
		m, err = nowait.WriteNow(fd, c.rawMsg[c.rawN:], true)
		c.rawN += m
	}
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		c.rawErr = err
	}
	return true
}

// SendResult answers the call id, taken by Intercept, with result (the
// encoded result object) without waiting (see send), and calls done with
// the write's error. An answer to a call the peer cancelled is dropped,
// as Write drops one, and done gets nil.
func (c *Conn) SendResult(id jsonrpc.ID, result []byte, done func(error)) {
	enc := canonical(id)
	if enc == nil {
		c.answered(id.Raw(), false)
		done(fmt.Errorf("jsonl: write result: id %v is not a string or an integer", id.Raw()))
		return
	}
	if c.dropCancelled(&jsonrpc.Response{ID: id}) {
		c.answered(id.Raw(), false)
		done(nil)
		return
	}
	data := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(enc)+len(result)+1)
	data = append(data, `{"jsonrpc":"2.0","id":`...)
	data = append(data, enc...)
	data = append(data, `,"result":`...)
	data = append(data, result...)
	data = append(data, '}', '\n')
	c.send(data, func(err error) {
		c.answered(id.Raw(), err != nil)
		if err != nil {
			err = fmt.Errorf("jsonl: write: %w", err)
		}
		done(err)
	})
}

// SendRaw writes one encoded message (no newline) as it is, without
// waiting (see send): a request or notification the caller built itself,
// on a connection whose other messages the SDK writes. done gets the
// write's error.
func (c *Conn) SendRaw(data []byte, done func(error)) {
	select {
	case <-c.closed:
		done(fmt.Errorf("jsonl: write: connection closed"))
		return
	default:
	}
	msg := make([]byte, 0, len(data)+1)
	msg = append(append(msg, data...), '\n')
	c.send(msg, func(err error) {
		if err != nil {
			err = fmt.Errorf("jsonl: write: %w", err)
		}
		done(err)
	})
}
