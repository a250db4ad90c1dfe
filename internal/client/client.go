// Package client is the daemon's socket client, used by the CLI verbs and
// by the `harness mcp` bridge. One Client is one control connection that
// carries many concurrent calls; DialMCP opens a connection in MCP mode and
// hands back the raw stream.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/protocol"
)

// HandshakeTimeout bounds the handshake when the caller's ctx has no
// deadline, so a wedged daemon cannot hang a CLI verb forever.
const HandshakeTimeout = 10 * time.Second

// SSHHandshakeTimeout is HandshakeTimeout for a daemon reached through
// ssh (--host), whose connection set-up can take seconds on its own.
const SSHHandshakeTimeout = 60 * time.Second

// eventBuffer is the queue length of each Subscribe channel.
const eventBuffer = 256

// ErrClosed is returned by calls on a Client after Close.
var ErrClosed = errors.New("client: connection closed")

// Client is a control-mode connection to the daemon. Its methods are safe
// for concurrent use; calls are multiplexed by request id.
type Client struct {
	socket  string
	nc      net.Conn
	welcome protocol.Welcome
	log     *slog.Logger

	wmu    sync.Mutex // one frame on the wire at a time
	nextID atomic.Uint64

	mu      sync.Mutex
	pending map[uint64]chan protocol.Response
	subs    map[*subscription]struct{}
	err     error         // why the connection ended; set before done closes
	done    chan struct{} // closed when the reader stops

	closeOnce sync.Once
	dropped   atomic.Uint64
}

type subscription struct {
	ch chan api.Event
}

// Dial connects to the daemon at socket and completes the handshake in
// control mode. A missing socket or one nobody listens on is an error
// wrapping errcode.ErrDaemonUnavailable that names the path; a protocol
// major the daemon does not speak wraps errcode.ErrVersionMismatch with the
// daemon's message.
func Dial(ctx context.Context, socket string) (*Client, error) {
	return DialWith(ctx, socket, SSHOptions{})
}

// DialWith is Dial with a remote host's ssh settings (ignored for a
// local socket).
func DialWith(ctx context.Context, socket string, o SSHOptions) (*Client, error) {
	nc, w, err := dialOpts(ctx, socket, o, protocol.Hello{Mode: protocol.ModeControl})
	if err != nil {
		return nil, err
	}
	c := &Client{
		socket:  socket,
		nc:      nc,
		welcome: w,
		log:     slog.Default(),
		pending: make(map[uint64]chan protocol.Response),
		subs:    make(map[*subscription]struct{}),
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// DialMCP connects in MCP mode, presenting token (a harness's
// HARNESS_MCP_TOKEN, or "") and the bridge's --allow-control flag. After the
// welcome the returned conn is a plain newline-delimited JSON-RPC stream;
// the caller owns and closes it.
func DialMCP(ctx context.Context, socket, token string, allowControl bool) (net.Conn, error) {
	nc, _, err := dial(ctx, socket, protocol.Hello{Mode: protocol.ModeMCP, Token: token, AllowControl: allowControl})
	return nc, err
}

// dial opens the socket and runs the handshake. It reads the welcome
// straight from the conn, without buffering, so in MCP mode no byte of the
// stream that follows is held back from the caller.
func dial(ctx context.Context, socket string, hello protocol.Hello) (net.Conn, protocol.Welcome, error) {
	return dialOpts(ctx, socket, SSHOptions{}, hello)
}

func dialOpts(ctx context.Context, socket string, o SSHOptions, hello protocol.Hello) (net.Conn, protocol.Welcome, error) {
	var w protocol.Welcome
	nc, err := connect(ctx, socket, o)
	if err != nil {
		return nil, w, err
	}
	w, err = handshake(ctx, nc, nc, socket, hello, nil)
	if err != nil {
		if cerr := nc.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", socket, cerr))
		}
		return nil, w, err
	}
	return nc, w, nil
}

// connect opens the socket, or the ssh connection to a remote daemon
// (ssh.go) when socket is an ssh:// address.
func connect(ctx context.Context, socket string, o SSHOptions) (net.Conn, error) {
	if IsRemote(socket) {
		return dialSSH(ctx, socket, o)
	}
	if scheme, _, ok := strings.Cut(socket, "://"); ok {
		return nil, fmt.Errorf("daemon address %s: a %s:// host is not served; use ssh://[user@]host[:port]: %w", socket, scheme, errcode.ErrInvalidArgument)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("daemon not running at %s: %w: %w", socket, err, errcode.ErrDaemonUnavailable)
		}
		return nil, fmt.Errorf("cannot reach daemon at %s: %w: %w", socket, err, errcode.ErrDaemonUnavailable)
	}
	return nc, nil
}

// handshake sends the hello, followed in the same write by pipelined (whole
// frames, or nil), and reads the welcome from r (nc, or a reader on it).
// The daemon reads the hello unbuffered, so frames sent behind it wait in
// the socket until the handshake is done; a daemon that refuses the hello
// never reads them.
func handshake(ctx context.Context, nc net.Conn, r io.Reader, socket string, hello protocol.Hello, pipelined []byte) (protocol.Welcome, error) {
	var w protocol.Welcome
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(HandshakeTimeout)
		if IsRemote(socket) {
			// ssh's connection, key exchange and the remote shell come first.
			deadline = time.Now().Add(SSHHandshakeTimeout)
		}
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return w, fmt.Errorf("handshake with %s: %w", socket, err)
	}
	unwatch := watch(ctx, nc)
	defer unwatch()

	hello.Proto = protocol.Version
	hello.Client = fmt.Sprintf("%s[%d]", filepath.Base(os.Args[0]), os.Getpid())
	payload, err := json.Marshal(hello)
	if err != nil {
		return w, fmt.Errorf("handshake with %s: encode hello: %w", socket, err)
	}
	out, err := protocol.AppendFrame(make([]byte, 0, 5+len(payload)+len(pipelined)), protocol.FrameHello, payload)
	if err != nil {
		return w, fmt.Errorf("handshake with %s: %w", socket, err)
	}
	if _, err := nc.Write(append(out, pipelined...)); err != nil {
		return w, handshakeErr(ctx, socket, fmt.Errorf("write %s frame: %w", protocol.FrameHello, err))
	}
	t, payload, err := protocol.ReadFrame(r, protocol.MaxFrame)
	if err != nil {
		return w, handshakeErr(ctx, socket, err)
	}
	switch t {
	case protocol.FrameWelcome:
		if err := json.Unmarshal(payload, &w); err != nil {
			return w, fmt.Errorf("handshake with %s: bad welcome: %w", socket, err)
		}
	case protocol.FrameError:
		return w, fmt.Errorf("handshake with daemon at %s: %w", socket, decodeRemote(payload))
	default:
		return w, fmt.Errorf("handshake with %s: unexpected %s frame", socket, t)
	}
	theirs, err := protocol.Major(w.Proto)
	mine, _ := protocol.Major(protocol.Version) // a constant; protocol's tests check it parses
	if err != nil || theirs != mine {
		return w, fmt.Errorf("handshake with daemon at %s: daemon speaks protocol %q, client %s: %w",
			socket, w.Proto, protocol.Version, errcode.ErrVersionMismatch)
	}
	unwatch()
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return w, fmt.Errorf("handshake with %s: clear deadline: %w", socket, err)
	}
	return w, nil
}

// watch makes cancelling ctx interrupt a blocked read or write on nc by
// moving its deadline into the past. The returned func stops watching (it
// may be called more than once); if ctx was cancelled meanwhile, it waits
// until that deadline has landed, so one the caller sets next is not
// overwritten.
func watch(ctx context.Context, nc net.Conn) (unwatch func()) {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = nc.SetDeadline(time.Unix(1, 0)) // only fails on a closed conn, which fails the read anyway
	})
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			if !stop() {
				<-fired
			}
		}
	}
}

func handshakeErr(ctx context.Context, socket string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("handshake with %s: %w", socket, ctx.Err())
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no answer from the daemon at %s in time for the handshake: %w: %w", socket, err, errcode.ErrDaemonUnavailable)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("daemon at %s closed the connection during the handshake: %w: %w",
			socket, err, errcode.ErrDaemonUnavailable)
	}
	return fmt.Errorf("handshake with %s: %w", socket, err)
}

// decodeRemote turns an Error frame or response error body into the
// *errcode.Remote callers match with errors.Is.
func decodeRemote(payload []byte) error {
	var b errcode.Body
	if err := json.Unmarshal(payload, &b); err != nil {
		return fmt.Errorf("bad error frame %q: %w", payload, err)
	}
	return &errcode.Remote{Code: b.Code, Message: b.Message}
}

// Welcome returns what the daemon said in the handshake.
func (c *Client) Welcome() protocol.Welcome { return c.welcome }

// DroppedEvents counts events this client discarded because a Subscribe
// channel was full.
func (c *Client) DroppedEvents() uint64 { return c.dropped.Load() }

// Call runs op on the daemon with args (any JSON-encodable value, or nil)
// and decodes the result into result (a pointer, or nil to discard it).
// Many calls may be in flight at once. A daemon error is returned as the
// *errcode.Remote itself, so its message reaches the user verbatim and
// errors.Is matches its code. Cancelling ctx abandons the wait; the
// daemon's late answer is discarded.
func (c *Client) Call(ctx context.Context, op string, args any, result any) error {
	id := c.nextID.Add(1)
	payload, err := encodeRequest(id, op, args)
	if err != nil {
		return err
	}
	ch := make(chan protocol.Response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("call %s: %w", op, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.send(ctx, protocol.FrameRequest, payload); err != nil {
		c.abandon(id)
		return fmt.Errorf("call %s: %w", op, err)
	}
	var resp protocol.Response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		c.abandon(id)
		return fmt.Errorf("call %s: %w", op, ctx.Err())
	case <-c.done:
		select {
		case resp = <-ch: // answered just before the connection ended
		default:
			return fmt.Errorf("call %s: %w", op, c.cause())
		}
	}
	return decodeResult(op, resp, result)
}

// encodeRequest is the payload of a Request frame.
func encodeRequest(id uint64, op string, args any) ([]byte, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("call %s: encode args: %w", op, err)
		}
		raw = b
	}
	payload, err := json.Marshal(protocol.Request{ID: id, Op: op, Args: raw})
	if err != nil {
		return nil, fmt.Errorf("call %s: encode request: %w", op, err)
	}
	// The daemon closes a connection that sends an oversized frame, which
	// would fail every other call on it: refuse this one call instead.
	if len(payload)+1 > protocol.MaxFrame {
		return nil, errcode.Errorf(errcode.InvalidArgument, "call %s: request of %d bytes is over the %d byte frame limit", op, len(payload), protocol.MaxFrame)
	}
	return payload, nil
}

// decodeResult turns a response into Call's error and result.
func decodeResult(op string, resp protocol.Response, result any) error {
	if resp.Error != nil {
		return &errcode.Remote{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if len(resp.Result) == 0 {
		return nil
	}
	rawOut, isRaw := result.(*json.RawMessage)
	isRaw = isRaw && rawOut != nil // a nil pointer is json.Unmarshal's error
	if result == nil || isRaw {
		// Nothing to decode, but a malformed answer is still an error.
		// (json.Unmarshal into a RawMessage would scan it twice.)
		if !json.Valid(resp.Result) {
			return fmt.Errorf("call %s: decode result: invalid JSON %.40q", op, resp.Result)
		}
		if isRaw {
			*rawOut = resp.Result
		}
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("call %s: decode result: %w", op, err)
	}
	return nil
}

// CallOnce runs one operation on a connection of its own and closes it,
// as a CLI verb does. It returns what Dial and Call would, but sends the
// request right behind the hello instead of waiting for the welcome, and
// reads both answers itself: one round trip to the daemon instead of two,
// and no reader goroutine.
func CallOnce(ctx context.Context, socket, op string, args any, result any) error {
	const id = 1
	payload, err := encodeRequest(id, op, args)
	if err != nil {
		return err
	}
	req, err := protocol.AppendFrame(nil, protocol.FrameRequest, payload)
	if err != nil {
		return fmt.Errorf("call %s: %w", op, err)
	}
	nc, err := connect(ctx, socket, SSHOptions{})
	if err != nil {
		return err
	}
	defer nc.Close() // after a complete answer nothing is lost if closing fails
	br := bufio.NewReader(nc)
	if _, err := handshake(ctx, nc, br, socket, protocol.Hello{Mode: protocol.ModeControl}, req); err != nil {
		return err
	}
	unwatch := watch(ctx, nc)
	defer unwatch()
	t, payload, err := protocol.ReadFrame(br, protocol.MaxFrame)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("call %s: %w", op, ctx.Err())
		}
		return fmt.Errorf("call %s: connection to daemon at %s lost: %w: %w", op, socket, err, errcode.ErrDaemonUnavailable)
	}
	switch t {
	case protocol.FrameResponse:
		resp, err := protocol.DecodeResponse(payload)
		if err != nil {
			return fmt.Errorf("call %s: daemon at %s sent a bad response: %w", op, socket, err)
		}
		if resp.ID != id {
			return fmt.Errorf("call %s: daemon at %s answered request %d, want %d", op, socket, resp.ID, id)
		}
		return decodeResult(op, resp, result)
	case protocol.FrameError:
		return fmt.Errorf("call %s: daemon at %s closed the connection: %w", op, socket, decodeRemote(payload))
	default:
		return fmt.Errorf("call %s: daemon at %s sent an unexpected %s frame", op, socket, t)
	}
}

// cause is why the connection ended, nil while it is up.
func (c *Client) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Client) abandon(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
}

// send writes one frame. Cancelling ctx interrupts a blocked write; since
// half a frame may then be on the wire, any write failure ends the client.
func (c *Client) send(ctx context.Context, t protocol.FrameType, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = c.nc.SetWriteDeadline(time.Unix(1, 0)) // only fails on a closed conn, which fails the write anyway
	})
	err := protocol.WriteFrame(c.nc, t, payload)
	if !stop() {
		<-fired
		if err == nil {
			if derr := c.nc.SetWriteDeadline(time.Time{}); derr != nil {
				err = fmt.Errorf("clear write deadline: %w", derr)
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		c.fail(fmt.Errorf("write to daemon at %s failed: %w", c.socket, err))
		return err
	}
	return nil
}

// Subscribe turns on daemon events for this connection and returns a
// channel of them. The channel is closed when ctx is done or the
// connection ends. A reader that falls more than a buffer behind loses
// events (counted by DroppedEvents) rather than stalling other calls.
func (c *Client) Subscribe(ctx context.Context) (<-chan api.Event, error) {
	sub := &subscription{ch: make(chan api.Event, eventBuffer)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	c.subs[sub] = struct{}{}
	c.mu.Unlock()
	if err := c.Call(ctx, api.OpSubscribe, nil, nil); err != nil {
		c.unsubscribe(sub)
		return nil, err
	}
	context.AfterFunc(ctx, func() { c.unsubscribe(sub) })
	return sub.ch, nil
}

func (c *Client) unsubscribe(sub *subscription) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.subs[sub]; ok {
		delete(c.subs, sub)
		close(sub.ch)
	}
}

// Close ends the connection and waits for the reader; calls in flight
// return ErrClosed.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = ErrClosed
		}
		c.mu.Unlock()
		if cerr := c.nc.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = fmt.Errorf("close connection to %s: %w", c.socket, cerr)
		}
		<-c.done
	})
	return err
}

// fail records why the connection ended (the first reason wins) and closes
// it, which stops the reader.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	if cerr := c.nc.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		c.log.Debug("client: close after failure", logkey.Socket, c.socket, logkey.Err, cerr)
	}
}

func (c *Client) readLoop() {
	defer func() {
		c.mu.Lock()
		for sub := range c.subs {
			delete(c.subs, sub)
			close(sub.ch)
		}
		c.mu.Unlock()
		close(c.done)
	}()
	br := bufio.NewReader(c.nc)
	for {
		t, payload, err := protocol.ReadFrame(br, protocol.MaxFrame)
		if err != nil {
			c.fail(fmt.Errorf("connection to daemon at %s lost: %w: %w", c.socket, err, errcode.ErrDaemonUnavailable))
			return
		}
		switch t {
		case protocol.FrameResponse:
			// The result is validated where it is decoded, in Call.
			resp, err := protocol.DecodeResponse(payload)
			if err != nil {
				c.fail(fmt.Errorf("daemon at %s sent a bad response: %w", c.socket, err))
				return
			}
			c.mu.Lock()
			ch, ok := c.pending[resp.ID]
			delete(c.pending, resp.ID)
			c.mu.Unlock()
			if ok {
				ch <- resp // buffered, one answer per id
			}
		case protocol.FrameEvent:
			var ev api.Event
			if err := json.Unmarshal(payload, &ev); err != nil {
				c.fail(fmt.Errorf("daemon at %s sent a bad event: %w", c.socket, err))
				return
			}
			c.deliver(ev)
		case protocol.FrameError:
			c.fail(fmt.Errorf("daemon at %s closed the connection: %w", c.socket, decodeRemote(payload)))
			return
		default:
			c.fail(fmt.Errorf("daemon at %s sent an unexpected %s frame", c.socket, t))
			return
		}
	}
}

func (c *Client) deliver(ev api.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for sub := range c.subs {
		select {
		case sub.ch <- ev:
		default:
			if c.dropped.Add(1) == 1 {
				c.log.Warn("client: event subscriber too slow, dropping events", logkey.Socket, c.socket)
			}
		}
	}
}
