// Package hosts keeps the daemon's view of other machines' fleets, the
// [host.NAME] tables (docs/design/remote.md): one connection per host
// through the SSH bridge, with the grant of that host's key, and the last
// list each host answered.
//
// The page reads Views, which never wait on a host: every host is polled
// and followed (its event stream) by a goroutine of its own, each call
// bounded by a timeout, and a host that cannot be reached, stops
// answering or answers garbage keeps its last good view with its age and
// the error, while its goroutine reconnects with a growing backoff. So a
// dead host costs the page nothing but a line saying so.
package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Host is one machine to follow.
type Host struct {
	// Name labels the host's fleet (its [host.NAME]).
	Name string
	// Addr is its ssh://[user@]host[:port] address.
	Addr string
	// SSH carries the key and remote socket to use.
	SSH client.SSHOptions
}

// Defaults of Options.
const (
	DefaultDialTimeout = 15 * time.Second
	DefaultCallTimeout = 10 * time.Second
	DefaultRefresh     = 30 * time.Second
	DefaultMinBackoff  = 1 * time.Second
	DefaultMaxBackoff  = 60 * time.Second
	// settle coalesces a burst of a host's events into one list.
	settle = 200 * time.Millisecond
)

// Options configure Start.
type Options struct {
	Hosts []Host
	// DialTimeout bounds reaching a host (ssh and the handshake);
	// CallTimeout one operation on it (a list, an answer, a start).
	DialTimeout, CallTimeout time.Duration
	// Refresh is how often a host is listed again without any event.
	Refresh time.Duration
	// MinBackoff and MaxBackoff bound the wait before reconnecting.
	MinBackoff, MaxBackoff time.Duration
	// OnChange is told a host's view changed (its units, or its error).
	// It must not block.
	OnChange func(host string)
	// OnEvent gets each event of a host's daemon, as it sent it. It must
	// not block.
	OnEvent func(host string, ev api.Event)
	Logger  *slog.Logger
	// Last are views to start from, by host name (a previous pool's, when
	// the hosts are reconfigured): their units show, with their age,
	// until the host answers again.
	Last map[string]View
}

// View is a host as the page shows it.
type View struct {
	Name, Addr string
	// Units is the host's last good list answer (a JSON array of rows),
	// nil before the first.
	Units json.RawMessage
	// Read is when Units was read.
	Read time.Time
	// Bridged says the connection is an SSH bridge's, whose key allows
	// Grant; a connection that is not (a local socket) allows all.
	Bridged bool
	Grant   []string
	// Err is why the host is not live now ("" when it is): Units, when
	// set, is then the last view before it went.
	Err string
}

// Pool follows every host of Options.
type Pool struct {
	opt    Options
	log    *slog.Logger
	hosts  map[string]*host
	order  []*host
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// host is one host's connection and view.
type host struct {
	Host
	kick chan struct{} // list again soon (after an action)

	mu   sync.Mutex
	c    *client.Client
	view View
}

// Start begins following every host; Close ends it.
func Start(opt Options) *Pool {
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = DefaultDialTimeout
	}
	if opt.CallTimeout <= 0 {
		opt.CallTimeout = DefaultCallTimeout
	}
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	if opt.MinBackoff <= 0 {
		opt.MinBackoff = DefaultMinBackoff
	}
	if opt.MaxBackoff < opt.MinBackoff {
		opt.MaxBackoff = max(DefaultMaxBackoff, opt.MinBackoff)
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{opt: opt, log: log.With(logkey.Component, "hosts"), hosts: map[string]*host{}, ctx: ctx, cancel: cancel}
	for _, hc := range opt.Hosts {
		h := &host{Host: hc, kick: make(chan struct{}, 1)}
		h.view = View{Name: hc.Name, Addr: hc.Addr, Err: "connecting"}
		if last, ok := opt.Last[hc.Name]; ok && last.Addr == hc.Addr {
			h.view.Units, h.view.Read = last.Units, last.Read
		}
		p.hosts[hc.Name] = h
		p.order = append(p.order, h)
		p.wg.Add(1)
		go p.follow(h)
	}
	return p
}

// Close ends every connection and goroutine.
func (p *Pool) Close() {
	p.cancel()
	p.wg.Wait()
}

// Views are every host's view now, in the configured order. It never
// waits on a host.
func (p *Pool) Views() []View {
	out := make([]View, 0, len(p.order))
	for _, h := range p.order {
		h.mu.Lock()
		out = append(out, h.view)
		h.mu.Unlock()
	}
	return out
}

// Call runs op on host's daemon, bounded by the call timeout: a refusal
// of the host's key (not_permitted) or daemon comes back as the host
// said it, naming the host.
func (p *Pool) Call(ctx context.Context, name, op string, args, result any) error {
	h := p.hosts[name]
	if h == nil {
		return errcode.Errorf(errcode.InvalidArgument, "no host %s: the configured hosts are %s", errcode.Quote(name), p.names())
	}
	h.mu.Lock()
	c, why := h.c, h.view.Err
	h.mu.Unlock()
	if c == nil {
		return fmt.Errorf("host %s is not reachable now (%s): %w", name, why, errcode.ErrDaemonUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, p.opt.CallTimeout)
	defer cancel()
	err := c.Call(ctx, op, args, result)
	select {
	case h.kick <- struct{}{}:
	default:
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("host %s did not answer %s within %s: %w", name, op, p.opt.CallTimeout, errcode.ErrDaemonUnavailable)
	}
	var remote *errcode.Remote
	if errors.As(err, &remote) {
		return &errcode.Remote{Code: remote.Code, Message: "host " + name + ": " + remote.Message}
	}
	return fmt.Errorf("host %s: %w", name, err)
}

func (p *Pool) names() string {
	var ns []string
	for _, h := range p.order {
		ns = append(ns, h.Name)
	}
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// follow keeps one host connected: a session while it answers, a wait
// that doubles (to MaxBackoff, with jitter) after each failure, back to
// MinBackoff once a session got as far as a list.
func (p *Pool) follow(h *host) {
	defer p.wg.Done()
	backoff := p.opt.MinBackoff
	for {
		listed, err := p.session(h)
		if p.ctx.Err() != nil {
			return
		}
		if listed {
			backoff = p.opt.MinBackoff
		}
		h.down(oneLine(err))
		p.changed(h)
		p.log.Info("host not live; reconnecting", logkey.Host, h.Name, logkey.Err, err, logkey.NextRetry, backoff)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(2*backoff, p.opt.MaxBackoff)
	}
}

// session is one connection to h: dial, subscribe, list, then list again
// on its events (coalesced), on the refresh tick and after an action,
// until something fails. listed says a list got through.
func (p *Pool) session(h *host) (listed bool, err error) {
	dctx, cancel := context.WithTimeout(p.ctx, p.opt.DialTimeout)
	c, err := client.DialWith(dctx, h.Addr, h.SSH)
	cancel()
	if err != nil {
		if errors.Is(dctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Errorf("no answer within %s", p.opt.DialTimeout)
		}
		return false, err
	}
	// Close may wait for ssh to exit: never on the page's path.
	defer c.Close()
	sctx, scancel := context.WithCancel(p.ctx)
	defer scancel()
	// A host that greets and then says nothing must not hold the session.
	guard := time.AfterFunc(p.opt.CallTimeout, func() { c.Close() })
	events, err := c.Subscribe(sctx)
	guard.Stop()
	if err != nil {
		return false, err
	}
	w := c.Welcome()
	h.mu.Lock()
	h.c = c
	h.view.Bridged, h.view.Grant = w.Bridged, w.Grant
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.c = nil
		h.mu.Unlock()
	}()
	if err := p.list(h, c); err != nil {
		return false, err
	}
	p.log.Info("host live", logkey.Host, h.Name, logkey.Addr, h.Addr)
	tick := time.NewTicker(p.opt.Refresh)
	defer tick.Stop()
	var soon <-chan time.Time
	for {
		select {
		case <-p.ctx.Done():
			return true, p.ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return true, fmt.Errorf("lost the connection: %w", c.Call(p.ctx, api.OpList, nil, nil))
			}
			if p.opt.OnEvent != nil {
				p.opt.OnEvent(h.Name, ev)
			}
			if soon == nil {
				soon = time.After(settle)
			}
			continue
		case <-h.kick:
		case <-soon:
		case <-tick.C:
		}
		soon = nil
		if err := p.list(h, c); err != nil {
			return true, err
		}
	}
}

// list reads h's units, bounded; an answer that is not a list of rows is
// garbage, and an error like a lost connection.
func (p *Pool) list(h *host, c *client.Client) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.opt.CallTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := c.Call(ctx, api.OpList, api.ListArgs{}, &raw); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("list: no answer within %s", p.opt.CallTimeout)
		}
		return err
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		return fmt.Errorf("list: the host answered something else than a list of units: %w", err)
	}
	h.mu.Lock()
	same := h.view.Err == "" && bytes.Equal(h.view.Units, raw)
	h.view.Units, h.view.Read, h.view.Err = raw, time.Now(), ""
	h.mu.Unlock()
	if !same {
		p.changed(h)
	}
	return nil
}

// down marks h not live, keeping its last units.
func (h *host) down(why string) {
	if why == "" {
		why = "not connected"
	}
	h.mu.Lock()
	h.view.Err = why
	h.mu.Unlock()
}

func (p *Pool) changed(h *host) {
	if p.opt.OnChange != nil {
		p.opt.OnChange(h.Name)
	}
}

// oneLine is err's text on one line, short enough for a heading.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
