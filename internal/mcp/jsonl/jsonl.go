// Package jsonl is an MCP transport for newline-delimited JSON-RPC byte
// streams (the stdio framing of the MCP specification), used by the daemon
// for both of its stdio hops: a bridged session on the socket and an
// upstream's pipes.
//
// It does what the go-sdk's IOTransport does, more cheaply. That transport
// decodes every inbound message up to four times, each time through a new
// decoder with its own 32 KiB buffer: on the proxy path that was most of the
// daemon's allocation and so most of its GC (see docs/benchmarks.md). Here a
// message is cut at its newline from one reused buffer and its envelope is
// decoded once; the params, result and error stay raw for the SDK.
//
// Differences from IOTransport, all on purpose: a message may span lines
// only if the lines before its last are an incomplete JSON value (a
// pretty-printed peer still works, in time linear in the message's size);
// the envelope's keys are matched exactly, as the SDK matches them; a
// response needs a result or an error; inbound batches (JSON-RPC arrays,
// allowed up to MCP 2025-03-26) are accepted whatever version was
// negotiated, because a transport outside the SDK cannot see it, and the
// responses to a batch go back as one array.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/nowait"
)

// DefaultMaxMessage bounds one inbound message, as the go-sdk's
// DefaultMaxLineLength does.
const DefaultMaxMessage = mcp.DefaultMaxLineLength

// ErrMessageTooLarge is returned by Read for an inbound message longer than
// the transport's limit; the connection is unusable after it.
var ErrMessageTooLarge = errors.New("jsonl: inbound message exceeds the size limit")

// ErrInvalidMessage is returned by Read for a line that is not a JSON-RPC
// 2.0 message; the connection is unusable after it.
var ErrInvalidMessage = errors.New("jsonl: invalid JSON-RPC message")

// Transport connects an MCP client or server to a newline-delimited
// JSON-RPC stream. Reader and Writer may be the same value (a net.Conn); it
// is closed once.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxMessage bounds one inbound message in bytes; 0 selects
	// DefaultMaxMessage.
	MaxMessage int
	// AnswerInvalid makes Read answer a line that is not a JSON-RPC
	// message with an error response (id null: parse error for bad JSON,
	// invalid request otherwise) and a message over MaxMessage with an
	// invalid request error (for its id, when one is seen), and read on,
	// as a server does; the session and the answers it owes survive a
	// client's bad line. Without it, Read returns ErrInvalidMessage or
	// ErrMessageTooLarge, which end the connection.
	AnswerInvalid bool
	// RefuseOversized makes Read skip an inbound message over MaxMessage
	// without keeping it, as a client does with an answer too large to
	// take: a response in its place is handed on as an error response
	// for its id (CodeTooLarge) so the call waiting on it ends at once,
	// a request is answered with an Invalid Request error, and the
	// connection reads on. Without it (and AnswerInvalid), Read returns
	// ErrMessageTooLarge.
	RefuseOversized bool
	// Intercept, when set, sees every request read on its own (not as
	// part of a batch) whose id the SDK writes back as it came, before the
	// SDK does: returning true takes the request away from the SDK, and
	// whoever took a call answers it with SendResult. A call taken is
	// still owed its answer (EOF waits for it) and a notifications/cancelled
	// naming it still drops that answer. It runs on the reading goroutine
	// and must not block.
	Intercept func(c *Conn, req *jsonrpc.Request) bool

	mu   sync.Mutex
	conn *Conn // made by Connect
}

// Close closes the connection Connect made, or Reader and Writer if
// Connect was not called. Owners of a session close it this way rather
// than through the streams: a Read that holds a peer's EOF back until its
// calls are answered ends only on the connection's Close.
func (t *Transport) Close() error {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	errR := t.Reader.Close()
	if t.Writer != nil && !same(t.Writer, t.Reader) {
		return errors.Join(errR, t.Writer.Close())
	}
	return errR
}

// Connect implements [mcp.Transport]. It never fails.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxMessage
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	c := &Conn{
		r:       bufio.NewReaderSize(nowait.NewReader(t.Reader), 16<<10),
		rc:      t.Reader,
		w:       t.Writer,
		ww:      nowait.NewWriter(t.Writer),
		rawW:    rawWriter(t.Writer),
		limit:   limit,
		answer:  t.AnswerInvalid,
		refuse:  t.RefuseOversized,
		hook:    t.Intercept,
		closed:  make(chan struct{}),
		pending: map[any]bool{},
	}
	c.pendingCV = sync.NewCond(&c.pendingMu)
	c.rawFn = c.rawWrite
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

// Conn is one connection made by [Transport.Connect]. Read is called from
// one goroutine at a time (the SDK's reader); Write and Close from any.
type Conn struct {
	r    *bufio.Reader
	rc   io.ReadCloser
	w    io.WriteCloser
	ww   io.Writer       // w's writes that wait in the poller, not in the kernel (nowait); under writeMu
	rawW syscall.RawConn // w's descriptor for writes that never wait (send.go), or nil
	// The message writeNow is writing, how much of it is written and the
	// error, for rawFn (c.rawWrite, made once); guarded by writeMu.
	rawMsg []byte
	rawN   int
	rawErr error
	// rawUsual: the descriptor cannot be written with RWF_NOWAIT, so
	// rawWrite uses a plain write (it is in non-blocking mode).
	rawUsual bool
	rawFn    func(fd uintptr) bool
	limit    int
	answer   bool // Transport.AnswerInvalid
	refuse   bool // Transport.RefuseOversized
	hook     func(*Conn, *jsonrpc.Request) bool

	line []byte // reused buffer of the message being read
	long Blocks // the line being read past keepBuffer (readLine)
	// over is the read that took a message past the limit, and the error
	// that came with it (readLine to skipOversized).
	over    []byte
	overErr error
	queue   []jsonrpc.Message // rest of an inbound batch, read side only

	writeMu sync.Mutex // one message at a time on the wire

	// Messages send could not write at once, in order, and whether a
	// goroutine is writing them (send.go).
	outMu    sync.Mutex
	out      []pendingWrite
	draining bool

	rawMu sync.Mutex
	raw   rawIDs // calls whose ids the SDK would not echo as written (rawid.go)

	batchMu sync.Mutex
	batches map[any]*batch // request id -> its inbound batch

	// Inbound calls not answered yet. When the peer ends its side, Read
	// holds the EOF back until they are: a client that writes its requests
	// and closes stdin (a script piping into `harness mcp`) still gets its
	// answers, instead of the SDK cancelling every call at EOF.
	pendingMu sync.Mutex
	pendingCV *sync.Cond // signalled when pending empties or the conn can no longer answer
	pending   map[any]bool
	cancelled map[any]bool // pending calls the peer cancelled: their answers are dropped
	stopWait  bool         // closed, or a write failed: answers cannot reach the peer

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// batch collects the responses to an inbound batch until every request in
// it has one.
type batch struct {
	pending   int
	responses []json.RawMessage
}

// SessionID implements [mcp.Connection]; a stream has no session id.
func (c *Conn) SessionID() string { return "" }

// Read implements [mcp.Connection]: the next message, or an error after
// which the connection is done (io.EOF when the peer closed cleanly or
// Close was called). When the peer closes cleanly, io.EOF waits until every
// call read has been answered (or Close, or a failed write).
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-c.closed:
		return nil, io.EOF
	default:
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	if cap(c.line) > keepBuffer {
		c.line = nil // one huge message must not pin its buffer for the session
	}
	c.line = c.line[:0]
	var scan *valueScanner // set once a value turns out to span lines
	for {
		start := len(c.line)
		err := c.readLine()
		if errors.Is(err, ErrMessageTooLarge) && (c.answer || c.refuse) {
			// Skipped, not kept: the session and the answers it owes
			// survive a message over the limit.
			size, id, isCall, serr := c.skipOversized()
			switch {
			case c.refuse && !isCall:
				// An answer: the call waiting on it gets an error.
				if msg := c.refusedAnswer(size, id); msg != nil && serr == nil {
					c.line = nil // not pinned while the next message is awaited
					return msg, nil
				}
			case c.refuse && id == nil:
				// A notification: nobody waits on it.
			default:
				if werr := c.answerOversized(size, id); werr != nil {
					return nil, werr
				}
			}
			c.line, scan = c.line[:0], nil
			if serr == nil {
				continue
			}
			err = serr
		}
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF
			default:
			}
			if errors.Is(err, io.EOF) && scan != nil {
				err = fmt.Errorf("jsonl: %w: %w", errUnfinished, io.ErrUnexpectedEOF)
				if !c.answer {
					return nil, err
				}
				// Answer the unfinished message, then end as at any EOF.
				if werr := c.answerInvalid(err); werr != nil {
					return nil, werr
				}
				err = io.EOF
			}
			if errors.Is(err, io.EOF) {
				c.awaitAnswers()
			}
			return nil, err
		}
		if scan != nil && !scan.feed(c.line[start:]) {
			continue // still inside the value: parsing it now would be wasted
		}
		data := bytes.TrimSpace(c.line)
		var msg jsonrpc.Message
		if data[0] == '[' {
			msg, err = c.readBatch(data)
		} else if msg, err = c.decode(data); err == nil {
			c.expectAnswer(msg)
			c.noteCancelled(msg)
			if c.intercepted(msg) {
				c.line, scan = c.line[:0], nil
				continue
			}
		}
		if !incomplete(err) {
			if err == nil || !c.answer || !errors.Is(err, ErrInvalidMessage) {
				return msg, err
			}
			if werr := c.answerInvalid(err); werr != nil {
				return nil, werr
			}
			c.line, scan = c.line[:0], nil
			continue
		}
		// A value spread over lines (a pretty-printing peer): from here on
		// only the new bytes are scanned, and the whole value is parsed
		// once it closes, so the cost stays linear in its size.
		if scan == nil {
			scan = &valueScanner{}
			scan.feed(c.line)
		}
	}
}

// expectAnswer records msg if it is a call, which Write must answer.
func (c *Conn) expectAnswer(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.pendingMu.Lock()
		c.pending[req.ID.Raw()] = true
		c.pendingMu.Unlock()
	}
}

// answered forgets the call id answers, and with failed set stops any
// wait for answers: they can no longer reach the peer.
func (c *Conn) answered(id any, failed bool) {
	c.pendingMu.Lock()
	delete(c.pending, id)
	delete(c.cancelled, id)
	c.stopWait = c.stopWait || failed
	if len(c.pending) == 0 || c.stopWait {
		c.pendingCV.Broadcast()
	}
	c.pendingMu.Unlock()
}

// awaitAnswers blocks until every call read so far has been answered, the
// connection is closed, a write has failed, or the peer is gone
// altogether (watchHangup).
func (c *Conn) awaitAnswers() {
	defer c.watchHangup()()
	c.pendingMu.Lock()
	for len(c.pending) > 0 && !c.stopWait {
		c.pendingCV.Wait()
	}
	c.pendingMu.Unlock()
}

// keepBuffer is the largest read or write buffer a connection keeps
// between messages.
const keepBuffer = 64 << 10

// readLine appends the next non-blank line to c.line. A last line without
// a newline before EOF counts as a line; the call after it returns io.EOF.
func (c *Conn) readLine() error {
	start := len(c.line)
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(c.line)+c.long.Len()+len(chunk) > c.limit {
			// Kept for skipOversized (valid until the next read).
			c.over, c.overErr = chunk, err
			return fmt.Errorf("%w (%d bytes)", ErrMessageTooLarge, c.limit)
		}
		if c.long.Len() > 0 || len(c.line)-start+len(chunk) > keepBuffer {
			c.long.Write(chunk) // a line past keepBuffer: in blocks until it ends
		} else {
			c.line = append(c.line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a line longer than the buffer: keep reading it
		}
		c.line = c.long.AppendTo(c.line)
		blank := len(bytes.TrimSpace(c.line[start:])) == 0
		switch {
		case err != nil && blank:
			return err
		case blank:
			c.line = c.line[:start]
		default:
			return nil
		}
	}
}

// incomplete reports whether err says the JSON ended before its value did.
func incomplete(err error) bool {
	if err == nil {
		return false // and no *SyntaxError escapes to the heap per message
	}
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}

// valueScanner follows the nesting of a JSON text fed to it in pieces,
// enough to tell when its top-level value has closed (as the SDK's depth
// check does: brackets outside strings, escapes inside them).
type valueScanner struct {
	depth            int
	inString, escape bool
}

// feed scans b and reports whether the text so far closes every bracket
// it opened, outside a string.
func (s *valueScanner) feed(b []byte) bool {
	for _, ch := range b {
		switch {
		case s.escape:
			s.escape = false
		case s.inString:
			switch ch {
			case '\\':
				s.escape = true
			case '"':
				s.inString = false
			}
		case ch == '"':
			s.inString = true
		case ch == '{' || ch == '[':
			s.depth++
		case ch == '}' || ch == ']':
			s.depth--
		}
	}
	return s.depth <= 0 && !s.inString
}

// readBatch decodes an inbound batch, returns its first message and queues
// the rest. Its requests with ids are remembered so that Write can send
// their responses back together.
func (c *Conn) readBatch(data []byte) (jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%w: batch: %w", ErrInvalidMessage, err)
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidMessage)
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{}
	ids := map[any]bool{}
	for _, raw := range raws {
		msg, err := c.decode(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if ids[req.ID.Raw()] {
				return nil, fmt.Errorf("%w: batch repeats request id %v", ErrInvalidMessage, req.ID.Raw())
			}
			ids[req.ID.Raw()] = true
			b.pending++
		}
		msgs = append(msgs, msg)
	}
	if b.pending > 0 {
		c.batchMu.Lock()
		if c.batches == nil {
			c.batches = make(map[any]*batch)
		}
		for id := range ids {
			if c.batches[id] != nil {
				c.batchMu.Unlock()
				return nil, fmt.Errorf("%w: batch reuses request id %v still in flight", ErrInvalidMessage, id)
			}
		}
		for id := range ids {
			c.batches[id] = b
		}
		c.batchMu.Unlock()
	}
	// Only a batch read whole owes answers: one refused above owes none.
	for _, msg := range msgs {
		c.expectAnswer(msg)
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// Write implements [mcp.Connection]: one message and its newline in one
// write, or, for the last response of an inbound batch, the batch's array.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if err := ctx.Err(); err != nil {
		if isResp {
			c.answered(resp.ID.Raw(), false) // given up on: nothing to wait for
		}
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		if isResp {
			c.answered(resp.ID.Raw(), false)
		}
		return fmt.Errorf("jsonl: encoding message: %w", err)
	}
	if isResp && !c.inBatch(resp) && c.dropCancelled(resp) {
		c.restoreID(resp, nil)
		c.answered(resp.ID.Raw(), false)
		return nil
	}
	if isResp {
		data = c.restoreID(resp, data)
	}
	if isResp {
		var complete bool
		if data, complete, err = c.batched(resp, data); err != nil || !complete {
			c.answered(resp.ID.Raw(), err != nil)
			return err
		}
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	_, err = c.ww.Write(data)
	c.writeMu.Unlock()
	if isResp {
		c.answered(resp.ID.Raw(), err != nil)
	} else if err != nil {
		c.answered(nil, true)
	}
	if err != nil {
		return fmt.Errorf("jsonl: write: %w", err)
	}
	return nil
}

// batched files the encoded response data of resp with its inbound batch,
// if it belongs to one. It returns what to write: data itself when resp is
// not part of a batch, the whole batch's array when resp completes it, or
// complete false when the batch still waits for other responses.
func (c *Conn) batched(resp *jsonrpc.Response, data []byte) ([]byte, bool, error) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b := c.batches[resp.ID.Raw()]
	if b == nil {
		return data, true, nil
	}
	delete(c.batches, resp.ID.Raw())
	b.responses = append(b.responses, data)
	if b.pending--; b.pending > 0 {
		return nil, false, nil
	}
	out, err := json.Marshal(b.responses)
	if err != nil {
		return nil, false, fmt.Errorf("jsonl: encoding batch response: %w", err)
	}
	return out, true, nil
}

// Close implements [mcp.Connection]: it closes the reader and the writer
// (once if they are the same value), which ends a Read in progress.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.answered(nil, true)
		errR := c.rc.Close()
		var errW error
		if c.w != nil && !same(c.w, c.rc) {
			errW = c.w.Close()
		}
		c.closeErr = errors.Join(errR, errW)
	})
	return c.closeErr
}

// same reports whether a and b are one value, without panicking on values
// that cannot be compared.
func same(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}
