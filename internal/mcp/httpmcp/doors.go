package httpmcp

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the HTTP door. A client that holds connections open without
// authenticating, or sends its headers or body a byte at a time, must not
// take the daemon's descriptors from the socket the CLI uses.
const (
	// ReadHeaderTimeout bounds the wait for a request's headers, including
	// a new connection's first request.
	ReadHeaderTimeout = 10 * time.Second
	// IdleConnTimeout closes a keep-alive connection that carries no request
	// for this long; clients reconnect transparently.
	IdleConnTimeout = 60 * time.Second
	// ReadTimeout bounds the time a whole request, body included, may take
	// to arrive. It does not cut long responses (SSE streams, waiting tool
	// calls): net/http lifts the read deadline once the body is read.
	ReadTimeout = 30 * time.Second
	// maxConnsCeiling is the most concurrent connections DefaultMaxConns
	// allows, whatever the descriptor limit.
	maxConnsCeiling = 256
	// minConns keeps the door usable under a very low descriptor limit.
	minConns = 16
)

// NewServer returns the http.Server of the endpoint with the door's read,
// header and idle timeouts. Serve it on a LimitListener.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleConnTimeout,
		// net/http's own complaints (TLS handshakes on a plain port,
		// accept errors) go to the daemon log, not to stderr.
		ErrorLog: slog.NewLogLogger(log.With(logkey.Component, "mcp-http").Handler(), slog.LevelWarn),
	}
}

// DefaultMaxConns is the cap on concurrent HTTP connections: a quarter of the
// process's descriptor limit, at most 256 and at least 16, so the HTTP door
// can never take the descriptors the control socket, the supervised PTYs and
// the state files need.
func DefaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return maxConnsCeiling
	}
	return int(max(minConns, min(maxConnsCeiling, lim.Cur/4)))
}

// SilentTimeout closes a connection that has sent nothing at all for this
// long: a real client speaks as soon as it connects.
const SilentTimeout = 3 * time.Second

// LimitListener returns a listener that holds at most n accepted connections
// open at once. A connection that sends nothing within SilentTimeout is
// closed, and at the cap a new connection takes the place of the oldest
// one that has sent nothing yet: 1,000 idle TCP connections kept a real
// client out for over 20 s. Past the cap with every connection
// speaking, Accept waits for one to close, and new clients wait in the
// kernel's backlog, which costs the daemon no descriptor.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{}), silent: map[*limitConn]struct{}{}}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	silent map[*limitConn]struct{} // accepted, nothing read from them yet
	seq    uint64
}

// MinSilentAge is how long a connection must have been open, sending
// nothing, before a new one may take its place: one accepted a moment ago
// may have its request waiting, not yet read.
const MinSilentAge = 250 * time.Millisecond

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.sem <- struct{}{}:
		default:
			l.evictSilent(time.Now().Add(-MinSilentAge))
			wait := time.NewTimer(MinSilentAge)
			select {
			case l.sem <- struct{}{}:
				wait.Stop()
			case <-l.done:
				wait.Stop()
				return nil, fmt.Errorf("httpmcp: accept: %w", net.ErrClosed)
			case <-wait.C:
				continue // a silent connection may be old enough now
			}
		}
		break
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		// Unwrapped: http.Server asserts net.Error on it to retry
		// temporary failures (EMFILE) instead of giving up.
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l, at: time.Now(), release: func() { <-l.sem }}
	lc.timer = time.AfterFunc(SilentTimeout, func() {
		if lc.isSilent() {
			_ = lc.Close()
		}
	})
	l.mu.Lock()
	l.seq++
	lc.seq = l.seq
	l.silent[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// evictSilent closes the oldest connection that has sent nothing since it
// was accepted, before cutoff, if any.
func (l *limitListener) evictSilent(cutoff time.Time) {
	l.mu.Lock()
	var oldest *limitConn
	for c := range l.silent {
		if c.at.After(cutoff) {
			continue
		}
		if oldest == nil || c.seq < oldest.seq {
			oldest = c
		}
	}
	l.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

// Close also wakes an Accept waiting for a free slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	if err := l.Listener.Close(); err != nil {
		return fmt.Errorf("httpmcp: close listener: %w", err)
	}
	return nil
}

type limitConn struct {
	net.Conn
	l       *limitListener
	seq     uint64
	at      time.Time // accepted
	timer   *time.Timer
	once    sync.Once
	release func()
}

// isSilent reports whether nothing was read from c yet.
func (c *limitConn) isSilent() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	_, ok := c.l.silent[c]
	return ok
}

func (c *limitConn) spoke() {
	c.l.mu.Lock()
	delete(c.l.silent, c)
	c.l.mu.Unlock()
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.spoke()
	}
	return n, err //nolint:wrapcheck // io semantics (io.EOF) must pass unchanged
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.spoke() // forgotten
		c.release()
	})
	if err != nil {
		return fmt.Errorf("httpmcp: close conn: %w", err)
	}
	return nil
}

// refuse answers status and closes the connection after the response, so a
// client that is refused cannot keep a connection (and a daemon descriptor)
// by simply never sending another request.
func refuse(w http.ResponseWriter, status int) {
	w.Header().Set("Connection", "close")
	http.Error(w, strings.ToLower(http.StatusText(status)), status)
}

// readBody reads a POST body, at most limit bytes, and leaves a copy for
// the go-sdk to read again.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("httpmcp: read body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// maxMessage is the POST body limit in force.
func (h *handler) maxMessage() int64 {
	if h.opt.MaxMessage != nil {
		if n := h.opt.MaxMessage(); n > 0 {
			return int64(n)
		}
	}
	return mcp.DefaultMaxRequestBodyBytes
}
