// Package egress is the proxy a sandboxed harness with network = "allow"
// reaches the network through (docs/design/sandbox.md): HTTP CONNECT and
// plain HTTP, one request per connection, to the listed host:port pairs
// only. It resolves names itself and pins each listed name to the
// addresses it first resolved to, so a later answer pointing elsewhere
// (DNS rebinding) is refused; everything refused is counted and reported.
// It is bounded in connections and idle time, and shares nothing with the
// daemon's actors.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config's bounds.
const (
	DefaultMaxConns      = 64
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHeaderTimeout = 10 * time.Second
	DefaultDialTimeout   = 10 * time.Second
)

// Reasons a request is refused.
const (
	ReasonNotListed = "not listed"
	ReasonRebinding = "resolves to an address the name did not first resolve to"
	ReasonSmuggled  = "more than one request on the connection"
	ReasonBad       = "malformed request"
	ReasonResolve   = "cannot resolve"
)

// Config is one proxy's allow list and bounds; zero bounds take defaults.
type Config struct {
	// Allow are host:port pairs (checked at config load).
	Allow []string
	// Resolve resolves a name; default net.DefaultResolver.LookupNetIP.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// OnDeny is told each refusal: the host:port asked for (or what was
	// sent) and why. It runs on the connection's goroutine and must not
	// block.
	OnDeny        func(target, reason string)
	MaxConns      int
	IdleTimeout   time.Duration
	HeaderTimeout time.Duration
	DialTimeout   time.Duration
}

// Proxy serves one allow list. Its zero value is not usable: use New.
type Proxy struct {
	cfg    Config
	allow  map[string]bool // "host:port", host lower-case
	sem    chan struct{}
	denied atomic.Int64

	mu     sync.Mutex
	pinned map[string][]netip.Addr // name -> its first answer
	conns  map[net.Conn]struct{}
	ls     []net.Listener
	closed bool
}

// New returns a proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	p := &Proxy{cfg: cfg, allow: map[string]bool{}, sem: make(chan struct{}, cfg.MaxConns),
		pinned: map[string][]netip.Addr{}, conns: map[net.Conn]struct{}{}}
	for _, a := range cfg.Allow {
		if k, ok := key(a); ok {
			p.allow[k] = true
		}
	}
	return p
}

// Denied is how many requests were refused so far.
func (p *Proxy) Denied() int64 { return p.denied.Load() }

// key is the canonical form of host:port, or false.
func key(hostport string) (string, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" {
		return "", false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	return net.JoinHostPort(host, port), true
}

// Serve accepts connections on l until l is closed or Close is called.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	p.ls = append(p.ls, l)
	p.mu.Unlock()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// EMFILE and the like: wait rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		select {
		case p.sem <- struct{}{}:
		default:
			// At the bound: refuse now rather than queue.
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			c.Close()
			continue
		}
		if !p.track(c) {
			<-p.sem
			c.Close()
			return net.ErrClosed
		}
		go func() {
			defer func() { <-p.sem }()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops every listener and ends every connection. It does not wait
// for their goroutines, which end on their own.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, l := range p.ls {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
}

// deny counts a refusal, answers it and reports it.
func (p *Proxy) deny(c net.Conn, status int, target, reason string) {
	p.denied.Add(1)
	msg := fmt.Sprintf("harness egress: %s refused: %s\n", target, reason)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(msg), msg)
	if p.cfg.OnDeny != nil {
		p.cfg.OnDeny(target, reason)
	}
}

func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			p.deny(c, http.StatusBadRequest, c.RemoteAddr().String(), ReasonBad)
		}
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		p.connect(c, br, req)
		return
	}
	p.plain(c, br, req)
}

// connect serves CONNECT host:port: a tunnel once the target passes.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	target := req.RequestURI
	if br.Buffered() > 0 || req.ContentLength != 0 || len(req.TransferEncoding) > 0 {
		// Bytes sent before the tunnel was granted would be read by no
		// one we checked: refuse rather than guess.
		p.deny(c, http.StatusBadRequest, target, ReasonSmuggled)
		return
	}
	up, ok := p.dial(c, target)
	if !ok {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	p.splice(c, up)
}

// plain serves one absolute-form HTTP request and closes the connection.
func (p *Proxy) plain(c net.Conn, br *bufio.Reader, req *http.Request) {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		p.deny(c, http.StatusBadRequest, req.RequestURI, ReasonBad)
		return
	}
	if req.Header.Get("Content-Length") != "" && len(req.TransferEncoding) > 0 {
		p.deny(c, http.StatusBadRequest, req.URL.Host, ReasonSmuggled)
		return
	}
	target := req.URL.Host
	if req.URL.Port() == "" {
		target = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	up, ok := p.dial(c, target)
	if !ok {
		return
	}
	defer up.Close()
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Upgrade"} {
		req.Header.Del(h)
	}
	req.Close = true // one request per connection, both ways
	req.RequestURI = ""
	_ = up.SetWriteDeadline(time.Now().Add(p.cfg.IdleTimeout))
	if err := req.Write(up); err != nil {
		return
	}
	if br.Buffered() > 0 {
		// A second request behind the first: never forwarded.
		p.denied.Add(1)
		if p.cfg.OnDeny != nil {
			p.cfg.OnDeny(target, ReasonSmuggled)
		}
	}
	_ = up.SetWriteDeadline(time.Time{})
	p.copyIdle(c, up, new(atomic.Int64))
}

// dial connects to target if it is listed and resolves to its pinned
// addresses; otherwise it answers the refusal.
func (p *Proxy) dial(c net.Conn, target string) (net.Conn, bool) {
	k, ok := key(target)
	if !ok || !p.allow[k] {
		p.deny(c, http.StatusForbidden, target, ReasonNotListed)
		return nil, false
	}
	host, port, _ := net.SplitHostPort(k)
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	addrs, reason := p.addrs(ctx, host)
	if reason != "" {
		p.deny(c, http.StatusForbidden, target, reason)
		return nil, false
	}
	var d net.Dialer
	var last error
	for _, a := range addrs {
		up, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			return up, true
		}
		last = err
	}
	msg := fmt.Sprintf("harness egress: %s unreachable: %v\n", target, last)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	return nil, false
}

// addrs resolves host now and keeps what its first answer had: an IP
// literal is itself, a name is pinned at first use.
func (p *Proxy) addrs(ctx context.Context, host string) ([]netip.Addr, string) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, ""
	}
	now, err := p.cfg.Resolve(ctx, host)
	if err != nil || len(now) == 0 {
		return nil, ReasonResolve
	}
	for i := range now {
		now[i] = now[i].Unmap()
	}
	p.mu.Lock()
	pin, ok := p.pinned[host]
	if !ok {
		p.pinned[host] = now
		pin = now
	}
	p.mu.Unlock()
	var keep []netip.Addr
	for _, a := range now {
		for _, b := range pin {
			if a == b {
				keep = append(keep, a)
				break
			}
		}
	}
	if len(keep) == 0 {
		return nil, ReasonRebinding
	}
	return keep, ""
}

// splice copies both ways until either side ends or both are idle for
// IdleTimeout.
func (p *Proxy) splice(c, up net.Conn) {
	last := new(atomic.Int64)
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	go func() { p.copyIdle(up, c, last); done <- struct{}{} }()
	go func() { p.copyIdle(c, up, last); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// copyIdle copies src to dst while either direction (last) moved within
// IdleTimeout.
func (p *Proxy) copyIdle(dst, src net.Conn, last *atomic.Int64) {
	buf := make([]byte, 32<<10)
	idle := p.cfg.IdleTimeout
	if last.Load() == 0 {
		last.Store(time.Now().UnixNano())
	}
	for {
		_ = src.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
				continue // the other direction is alive
			}
			return
		}
	}
}
