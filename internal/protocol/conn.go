package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

var connIDs atomic.Uint64

// conn is one accepted connection. Its read loop is the only reader; every
// write goes through write, under wmu, so frames never interleave.
type conn struct {
	s     *Server
	nc    net.Conn
	id    uint64
	hello Hello // set by the handshake, read-only afterwards

	ctx    context.Context
	cancel context.CancelFunc

	wmu       sync.Mutex
	closeOnce sync.Once

	// handoff is set by the handshake when the client's stdio will be
	// served directly (handoff.go); Shutdown then lets the session end
	// and say so (FrameEnded) instead of cutting the socket.
	handoff atomic.Bool

	subscribed bool           // read-loop goroutine only
	events     chan api.Event // set before the conn joins s.subs
	dropped    atomic.Uint64

	workers sync.WaitGroup // request goroutines and the event writer

	attach AttachSession // attach mode: opened by the handshake
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{s: s, nc: nc, id: connIDs.Add(1), ctx: ctx, cancel: cancel}
}

// close is idempotent and safe from any goroutine (Shutdown included).
func (c *conn) close() {
	c.closeOnce.Do(func() {
		// Close before cancelling: a handler that returns on cancellation
		// then finds no wire to answer on, so the client sees the daemon
		// go away rather than a stray "context canceled" result.
		if err := c.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.s.logger().Debug("protocol: close connection", logkey.Conn, c.id, logkey.Err, err)
		}
		c.cancel()
	})
}

func (c *conn) serve() {
	defer c.s.forget(c)
	defer c.close()
	log := c.s.logger()

	hello, ok := c.handshake()
	if !ok {
		if c.attach != nil { // opened, but the welcome never reached the viewer
			c.attach.Close()
		}
		return
	}
	c.hello = hello
	log.Debug("protocol: connection accepted", logkey.Conn, c.id, logkey.Mode, hello.Mode, logkey.Client, hello.Client)
	ctx := WithHello(c.ctx, hello)

	if hello.Mode == ModeMCP {
		if srv, ok := c.s.Handler.(MCPStdioServer); ok && c.handoff.Load() {
			c.serveStdio(ctx, srv)
			return
		}
		c.serveMCP(ctx)
		return
	}
	if c.attach != nil {
		c.serveAttach(ctx)
		return
	}
	c.readLoop(ctx)
	// Workers write to nc, so wait for them before the deferred close
	// makes their last answers fail; they stop early when ctx is cancelled.
	c.cancel()
	c.workers.Wait()
}

// handshake reads the Hello straight from the socket, without a bufio
// layer: in MCP mode the bytes after the Hello belong to the handler, and
// none of them may be stranded in a buffer we drop.
func (c *conn) handshake() (Hello, bool) {
	var h Hello
	timeout := orDefault(c.s.HandshakeTimeout, DefaultHandshakeTimeout)
	if err := c.nc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		c.s.logger().Debug("protocol: set handshake deadline", logkey.Conn, c.id, logkey.Err, err)
		return h, false
	}
	t, payload, err := ReadFrame(c.nc, c.s.maxFrame())
	if err != nil {
		c.frameError("handshake", err)
		return h, false
	}
	if t != FrameHello {
		c.reject(errcode.InvalidArgument, fmt.Sprintf("first frame must be hello, got %s", t))
		return h, false
	}
	if err := json.Unmarshal(payload, &h); err != nil {
		c.reject(errcode.InvalidArgument, fmt.Sprintf("bad hello JSON: %v", err))
		return h, false
	}
	if err := CheckVersion(h.Proto); err != nil {
		c.reject(errcode.VersionMismatch, err.Error())
		return h, false
	}
	if h.Mode != ModeControl && h.Mode != ModeMCP && h.Mode != ModeAttach {
		c.reject(errcode.InvalidArgument, fmt.Sprintf("hello mode %q: want %q, %q or %q", h.Mode, ModeControl, ModeMCP, ModeAttach))
		return h, false
	}
	if h.Mode == ModeAttach && !c.openAttach(h) {
		return h, false
	}
	if a, ok := c.s.Handler.(MCPAuthenticator); ok && h.Mode == ModeMCP {
		if err := a.AuthenticateMCP(h); err != nil {
			c.reject(errcode.Of(err), err.Error())
			return h, false
		}
	}
	if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
		c.s.logger().Debug("protocol: clear handshake deadline", logkey.Conn, c.id, logkey.Err, err)
		return h, false
	}
	_, canServeStdio := c.s.Handler.(MCPStdioServer)
	handoff := h.Mode == ModeMCP && h.Handoff && canServeStdio
	c.handoff.Store(handoff)
	w, err := json.Marshal(Welcome{Proto: Version, Version: c.s.Version, PID: pid, Handoff: handoff})
	if err != nil {
		c.s.logger().Error("protocol: encode welcome", logkey.Err, err)
		return h, false
	}
	if err := c.write(FrameWelcome, w); err != nil {
		return h, false
	}
	return h, true
}

func (c *conn) serveMCP(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			c.s.logger().Error("protocol: MCP handler panicked", logkey.Conn, c.id,
				logkey.Client, c.hello.Client, logkey.Panic, r, logkey.Stack, string(debug.Stack()))
		}
	}()
	// The welcome was written under a write deadline; the stream now
	// belongs to a long-lived MCP session, so no deadline may outlive it.
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		c.s.logger().Error("protocol: clear deadlines for MCP stream", logkey.Conn, c.id, logkey.Err, err)
		return
	}
	c.s.Handler.ServeMCP(ctx, c.nc, c.hello)
}

func (c *conn) readLoop(ctx context.Context) {
	br := bufio.NewReader(c.nc)
	sem := make(chan struct{}, MaxInFlight)
	for {
		t, payload, err := ReadFrame(br, c.s.maxFrame())
		if err != nil {
			c.frameError("read", err)
			return
		}
		if t != FrameRequest {
			c.reject(errcode.InvalidArgument, fmt.Sprintf("unexpected %s frame in control mode", t))
			return
		}
		var req Request
		if err := json.Unmarshal(payload, &req); err != nil {
			c.reject(errcode.InvalidArgument, fmt.Sprintf("bad request JSON: %v", err))
			return
		}
		if len(req.Args) == 0 || string(req.Args) == "null" {
			req.Args = json.RawMessage("{}")
		}
		switch {
		case req.Op == "":
			c.respond(req, nil, errcode.Errorf(errcode.InvalidArgument, "request %d: op is required", req.ID))
			continue
		case req.Op == api.OpSubscribe:
			c.startEvents(ctx)
			c.respond(req, struct{}{}, nil)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			defer func() { <-sem }()
			res, err := c.call(ctx, req)
			c.respond(req, res, err)
		}()
	}
}

// call runs the handler, turning a panic into an internal error so one bad
// op cannot take the daemon down.
func (c *conn) call(ctx context.Context, req Request) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.logger().Error("protocol: handler panicked", logkey.Conn, c.id, logkey.Op, req.Op,
				logkey.Panic, r, logkey.Stack, string(debug.Stack()))
			res, err = nil, errcode.Errorf(errcode.Internal, "op %s: handler panicked: %v", req.Op, r)
		}
	}()
	return c.s.Handler.Call(ctx, req.Op, req.Args)
}

func (c *conn) respond(req Request, res any, err error) {
	var payload []byte
	if err == nil {
		buf := frameBufs.Get().(*bytes.Buffer)
		defer putFrameBuf(buf)
		frame, merr := ResponseFrame(buf, req.ID, res)
		switch {
		case merr != nil:
			err = errcode.Errorf(errcode.Internal, "op %s: encode result: %v", req.Op, merr)
		case len(frame)-4 > c.s.maxFrame():
			payload = frame[5:] // answered with the size error below
		default:
			if err := c.writeFrame(frame); err != nil {
				c.s.logger().Debug("protocol: response not delivered", logkey.Conn, c.id, logkey.Op, req.Op, logkey.Err, err)
			}
			return
		}
	}
	if err != nil {
		c.s.logger().Debug("protocol: request failed", logkey.Conn, c.id, logkey.Op, req.Op, logkey.Err, err)
		body := errcode.BodyOf(err)
		var merr error
		payload, merr = json.Marshal(Response{ID: req.ID, Error: &body})
		if merr != nil {
			c.s.logger().Error("protocol: encode response", logkey.Op, req.Op, logkey.Err, merr)
			return
		}
	}
	if len(payload)+1 > c.s.maxFrame() {
		// The client would reject the frame and lose the connection; answer
		// this one request with an error instead.
		body := errcode.BodyOf(errcode.Errorf(errcode.Internal,
			"op %s: result of %d bytes exceeds the %d-byte frame limit", req.Op, len(payload), c.s.maxFrame()))
		var merr error
		payload, merr = json.Marshal(Response{ID: req.ID, Error: &body})
		if merr != nil {
			c.s.logger().Error("protocol: encode response", logkey.Op, req.Op, logkey.Err, merr)
			return
		}
	}
	if err := c.write(FrameResponse, payload); err != nil {
		c.s.logger().Debug("protocol: response not delivered", logkey.Conn, c.id, logkey.Op, req.Op, logkey.Err, err)
	}
}

// startEvents registers the connection as a subscriber before the
// subscribe op is answered, so every event published after the client
// sees the answer reaches it.
func (c *conn) startEvents(ctx context.Context) {
	if c.subscribed {
		return
	}
	c.subscribed = true
	c.events = make(chan api.Event, orDefault(c.s.EventBuffer, DefaultEventBuffer))
	c.s.subscribe(c)
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-c.events:
				payload, err := json.Marshal(ev)
				if err != nil {
					c.s.logger().Error("protocol: encode event", logkey.Kind, ev.Kind, logkey.Err, err)
					continue
				}
				if err := c.write(FrameEvent, payload); err != nil {
					c.s.logger().Debug("protocol: event not delivered", logkey.Conn, c.id, logkey.Err, err)
					return
				}
			}
		}
	}()
}

// write sends one frame. A failed or timed-out write may have left half a
// frame on the wire, so the connection is closed rather than reused.
func (c *conn) write(t FrameType, payload []byte) error {
	frame, err := AppendFrame(make([]byte, 0, 5+len(payload)), t, payload)
	if err != nil {
		return fmt.Errorf("conn %d: %w", c.id, err)
	}
	return c.writeFrame(frame)
}

// writeFrame writes one whole frame (header and payload) under wmu.
func (c *conn) writeFrame(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	timeout := orDefault(c.s.WriteTimeout, DefaultWriteTimeout)
	if err := c.nc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		c.close()
		return fmt.Errorf("conn %d: set write deadline: %w", c.id, err)
	}
	if _, err := c.nc.Write(frame); err != nil {
		c.close()
		return fmt.Errorf("conn %d: write %s frame: %w", c.id, FrameType(frame[4]), err)
	}
	return nil
}

// reject answers a protocol violation with an Error frame; the caller then
// returns and the connection closes.
func (c *conn) reject(code errcode.Code, msg string) {
	c.s.logger().Info("protocol: rejecting connection", logkey.Conn, c.id, logkey.Client, c.hello.Client,
		logkey.Code, code, logkey.Reason, msg)
	payload, err := json.Marshal(errcode.Body{Code: code, Message: msg})
	if err != nil {
		c.s.logger().Error("protocol: encode error frame", logkey.Err, err)
		return
	}
	if err := c.write(FrameError, payload); err != nil {
		c.s.logger().Debug("protocol: error frame not delivered", logkey.Conn, c.id, logkey.Err, err)
	}
}

// frameError sorts a read failure: a bad frame is answered, a closed or
// vanished peer is not.
func (c *conn) frameError(stage string, err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrMalformed):
		c.reject(errcode.InvalidArgument, err.Error())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
		// Normal end of a connection.
	default:
		c.s.logger().Debug("protocol: connection read failed", logkey.Conn, c.id, logkey.Stage, stage, logkey.Err, err)
	}
}

// isTemporaryAccept reports accept errors worth retrying: resource
// exhaustion and a peer that gave up before we accepted.
func isTemporaryAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS,
		syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
