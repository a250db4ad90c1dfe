package webhook

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// bucket is a token bucket: perMinute tokens, refilled continuously.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	cap    float64
	tokens float64
	last   time.Time
}

func newBucket(perMinute int, now time.Time) *bucket {
	return &bucket{rate: float64(perMinute) / 60, cap: float64(perMinute), tokens: float64(perMinute), last: now}
}

// refillLocked adds the tokens earned since the last look.
func (b *bucket) refillLocked(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.cap, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// empty reports whether a take would fail now, without taking.
func (b *bucket) empty(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	return b.tokens < 1
}

// full reports whether the bucket is as it would be new.
func (b *bucket) full(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(now)
	return b.tokens >= b.cap
}

// maxSources bounds the sources a route remembers failures of.
const maxSources = 4096

// failures rate-limits the refused requests of each source apart from the
// route's bucket, which only verified deliveries take from: a stranger's
// bad signatures use up the stranger's budget, never the sender's.
type failures struct {
	mu        sync.Mutex
	perMinute int
	by        map[string]*bucket
}

func newFailures(perMinute int) *failures {
	return &failures{perMinute: perMinute, by: map[string]*bucket{}}
}

// blocked reports whether src has used its budget of failures.
func (f *failures) blocked(src string, now time.Time) bool {
	f.mu.Lock()
	b := f.by[src]
	f.mu.Unlock()
	return b != nil && b.empty(now)
}

// fail counts a refused request of src.
func (f *failures) fail(src string, now time.Time) {
	f.mu.Lock()
	b := f.by[src]
	if b == nil {
		if len(f.by) >= maxSources {
			f.pruneLocked(now)
		}
		b = newBucket(f.perMinute, now)
		f.by[src] = b
	}
	f.mu.Unlock()
	b.take(now)
}

// pruneLocked forgets the sources whose budget has refilled, and one more
// if none has, so that the map stays bounded under a spread-out flood.
func (f *failures) pruneLocked(now time.Time) {
	for k, b := range f.by {
		if b.full(now) {
			delete(f.by, k)
		}
	}
	for k := range f.by {
		if len(f.by) < maxSources {
			break
		}
		delete(f.by, k)
	}
}

// source is who sent req, for the failure budget: the peer's address, or
// an IPv6 peer's /64 (one host holds a whole /64). Behind a proxy on
// loopback (a tunnel, a TLS terminator) every request comes from
// loopback, so the last X-Forwarded-For entry, which that proxy appended,
// names the sender.
func source(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		if xff := req.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			last := xff[len(xff)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if fwd, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				ip = fwd.Unmap()
			}
		}
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
