package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/logkey"
)

// Handler serves what the protocol itself does not: control operations and
// MCP sessions.
type Handler interface {
	// Call runs a control operation. Errors carry errcode codes; the code
	// reaches the client, an error without one is sent as internal. ctx
	// carries the connection's Hello (HelloFrom) and is cancelled when the
	// connection closes or the server shuts down.
	Call(ctx context.Context, op string, args json.RawMessage) (any, error)
	// ServeMCP owns conn, a raw newline-delimited JSON-RPC stream, until it
	// returns; the server closes conn afterwards. ctx is cancelled on Shutdown.
	ServeMCP(ctx context.Context, conn net.Conn, hello Hello)
}

// MCPAuthenticator is an optional Handler capability: it vets an MCP-mode
// Hello (its token) before the Welcome, so a refused token is answered
// with an Error frame the client can read, not a silently closed stream.
type MCPAuthenticator interface {
	AuthenticateMCP(hello Hello) error
}

// Defaults for the Server's zero-valued tuning fields.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultWriteTimeout     = 30 * time.Second
	DefaultEventBuffer      = 256
	// MaxInFlight bounds concurrent requests per connection; the reader
	// stops reading (backpressure) until one finishes.
	MaxInFlight = 64
)

// ErrServerClosed is returned by Serve when called after Shutdown.
var ErrServerClosed = errors.New("protocol: server closed")

// Server is the control socket server. Set the exported fields before
// Serve; the zero value of each tuning field picks its default.
type Server struct {
	Handler Handler
	// Version is the daemon's build version, sent in the Welcome.
	Version string
	// MaxFrame bounds frames in both directions; 0 means MaxFrame.
	MaxFrame int
	// Logger receives connection and request diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// HandshakeTimeout bounds the wait for the Hello; 0 means the default.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds one frame write, so a client that stops reading
	// is disconnected instead of pinning goroutines; 0 means the default.
	WriteTimeout time.Duration
	// EventBuffer is the per-subscriber queue length; 0 means the default.
	EventBuffer int

	initOnce sync.Once
	ctx      context.Context // parent of every connection; cancelled by Shutdown
	cancel   context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	subs      map[*conn]struct{}
	taps      map[chan api.Event]struct{} // in-process subscribers (Subscribe)
	wg        sync.WaitGroup

	dropped atomic.Uint64
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[*conn]struct{})
		s.subs = make(map[*conn]struct{})
	})
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) maxFrame() int {
	if s.MaxFrame > 0 {
		return s.MaxFrame
	}
	return MaxFrame
}

func orDefault[T ~int | ~int64](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// Serve accepts connections on ln until Shutdown, then returns nil. It
// closes ln on return. Other accept failures are returned wrapped.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if err := ln.Close(); err != nil {
			s.logger().Warn("protocol: close listener", logkey.Addr, ln.Addr().String(), logkey.Err, err)
		}
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// EMFILE and friends: back off rather than spin, like net/http.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logger().Warn("protocol: accept failed, retrying", logkey.Err, err, logkey.Delay, backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.ctx.Done():
					t.Stop()
					return nil
				}
				continue
			}
			_ = ln.Close() // best effort; the accept error is what matters
			return fmt.Errorf("protocol: accept on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Publish fans ev out to every subscribed connection. It never blocks: a
// subscriber whose queue is full loses the event, which is counted
// (DroppedEvents) and logged.
func (s *Server) Publish(ev api.Event) {
	s.init()
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.taps {
		select {
		case ch <- ev:
		default:
			s.dropped.Add(1)
		}
	}
	for c := range s.subs {
		select {
		case c.events <- ev:
		default:
			s.dropped.Add(1)
			if c.dropped.Add(1) == 1 {
				// Once per connection: a stuck reader must not flood the log.
				s.logger().Warn("protocol: subscriber too slow, dropping events",
					logkey.Conn, c.id, logkey.Client, c.hello.Client, logkey.Buffer, cap(c.events))
			}
		}
	}
}

// Subscribe is an in-process subscription to what Publish fans out (the
// web dashboard's event stream), with a queue of buf events, until cancel
// is called. Like a slow socket subscriber, a full queue loses events
// (counted in DroppedEvents); the channel is never closed.
func (s *Server) Subscribe(buf int) (events <-chan api.Event, cancel func()) {
	s.init()
	ch := make(chan api.Event, buf)
	s.mu.Lock()
	if s.taps == nil {
		s.taps = make(map[chan api.Event]struct{})
	}
	s.taps[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.taps, ch)
		s.mu.Unlock()
	}
}

// DroppedEvents is the number of events dropped for slow subscribers since
// the server started.
func (s *Server) DroppedEvents() uint64 { return s.dropped.Load() }

func (s *Server) subscribe(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[c] = struct{}{}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	delete(s.subs, c)
}

// Shutdown stops accepting, cancels every handler's context, closes every
// connection (MCP streams included; a session on handed-off stdio first
// ends and tells its client why) and waits for the server's goroutines,
// or until ctx is done, whose error it then returns after closing every
// connection left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.closed = true
	var errs []error
	for ln := range s.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close listener %s: %w", ln.Addr(), err))
		}
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	for _, c := range conns {
		// A handed-off session ends with the context cancelled below; its
		// conn then tells the client why and closes (serveStdio).
		if !c.handoff.Load() {
			c.close()
		}
	}
	s.cancel()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range conns {
			c.close()
		}
		errs = append(errs, fmt.Errorf("protocol: shutdown: waiting for connections: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}
