// Package ratelimit is the token-bucket policy of the gateway's rate
// limits (docs/gateway.md): per upstream, per tool and per calling
// harness. It is pure: no goroutine and no timer per bucket; a bucket is
// two numbers refilled from the clock when a call asks, and the clock is
// the caller's (now is passed in), so tests drive time.
package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limit is a rate in calls per second and the burst a full bucket holds.
// The zero Limit limits nothing.
type Limit struct {
	PerSecond float64
	Burst     int
}

// Zero reports whether l limits nothing.
func (l Limit) Zero() bool { return l.PerSecond <= 0 }

// String renders l as configured: "2/s burst 4".
func (l Limit) String() string {
	return fmt.Sprintf("%s/s burst %d", strconv.FormatFloat(l.PerSecond, 'g', -1, 64), l.Burst)
}

// Parse reads a rate as "N/s", "N/m" or "N/h" (N > 0, a number) with the
// burst given, or when burst is 0 the default: one second's worth of
// calls, at least 1.
func Parse(rate string, burst int) (Limit, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(rate), "/")
	if !ok {
		return Limit{}, fmt.Errorf("rate %q: want N/s, N/m or N/h (as in \"20/s\")", rate)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return Limit{}, fmt.Errorf("rate %q: %q is not a number > 0", rate, n)
	}
	var per float64
	switch strings.TrimSpace(unit) {
	case "s":
		per = 1
	case "m":
		per = 60
	case "h":
		per = 3600
	default:
		return Limit{}, fmt.Errorf("rate %q: unit %q is not s, m or h", rate, unit)
	}
	if burst < 0 {
		return Limit{}, fmt.Errorf("burst %d: must be >= 1", burst)
	}
	l := Limit{PerSecond: v / per, Burst: burst}
	if l.Burst == 0 {
		l.Burst = max(1, int(math.Ceil(l.PerSecond)))
	}
	return l, nil
}

// Want is one bucket a call must take a token from: Key names it (an
// upstream, a tool, a harness), Limit is its rate in force.
type Want struct {
	Key   string
	Limit Limit
}

// Limiter holds the buckets by key. Safe for concurrent use. Buckets live
// as long as their key is asked for; Forget drops the ones no longer
// configured, so memory follows the configuration, not the traffic.
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a limiter with no buckets (every bucket starts full).
func New() *Limiter { return &Limiter{buckets: map[string]*bucket{}} }

// Take takes one token from every bucket of wants at now, or from none:
// a call refused by one bucket costs the others nothing. When refused it
// returns how long until every bucket has a token, and the key of the
// bucket that refused (the one with the longest wait).
func (l *Limiter) Take(now time.Time, wants ...Want) (ok bool, wait time.Duration, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst float64 // seconds
	for _, w := range wants {
		if w.Limit.Zero() {
			continue
		}
		b := l.refill(now, w)
		if b.tokens >= 1 {
			continue
		}
		if s := (1 - b.tokens) / w.Limit.PerSecond; s > worst || key == "" {
			worst, key = s, w.Key
		}
	}
	if key != "" {
		return false, time.Duration(math.Ceil(worst * float64(time.Second))), key
	}
	for _, w := range wants {
		if !w.Limit.Zero() {
			l.buckets[w.Key].tokens--
		}
	}
	return true, 0, ""
}

// refill brings w's bucket up to now and returns it. Caller holds l.mu.
func (l *Limiter) refill(now time.Time, w Want) *bucket {
	burst := float64(max(w.Limit.Burst, 1))
	b := l.buckets[w.Key]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		l.buckets[w.Key] = b
		return b
	}
	if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens += d * w.Limit.PerSecond
		b.last = now
	}
	// A reload may have lowered the burst.
	b.tokens = min(b.tokens, burst)
	return b
}

// Forget drops every bucket whose key keep rejects.
func (l *Limiter) Forget(keep func(key string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.buckets {
		if !keep(k) {
			delete(l.buckets, k)
		}
	}
}

// Len is how many buckets the limiter holds.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
