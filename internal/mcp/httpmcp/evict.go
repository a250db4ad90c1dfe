package httpmcp

import (
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxSessionsPerCredential is how many HTTP sessions one token may
// hold at once. Clients that vanish without deleting their session (a killed
// process, a dropped laptop lid) would otherwise pile sessions up until the
// idle timeout; with the cap, a new session ends the token's least recently
// used one instead, if that one has been left alone for RecentUse. A
// session in use is never ended for another: over the cap with every
// session in use, a new one is refused with 503 and Retry-After (ending
// sessions in active use gave 31-69% of calls a 404).
const DefaultMaxSessionsPerCredential = 32

// RecentUse is how long after its last request a session is safe from
// eviction.
const RecentUse = time.Minute

// evictable reports whether b may be ended for a new session at now.
// Caller holds handler.mu.
func (h *handler) evictable(b *binding, now time.Time) bool {
	return b.active == 0 && now.Sub(b.last) >= h.opt.RecentUse
}

// reserve reports whether ns's caller may open one more session, and if
// not, how long until one of its sessions may be evicted at the earliest.
// When it may, ns holds a place until its session is bound or its
// initialize ends: initializes of one token that arrive together must not
// each see the same free place (34 sessions were let in under a cap of 32).
func (h *handler) reserve(ns *newSession) (bool, time.Duration) {
	c := ns.c
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	// Places taken: bound sessions and initializes under way, less the
	// sessions bindNew may end for a new one.
	taken, wait := h.starting[c.hash], h.opt.RecentUse
	for _, b := range h.bound {
		if b.hash != c.hash {
			continue
		}
		if h.evictable(b, now) {
			continue
		}
		taken++
		if b.active == 0 {
			wait = min(wait, h.opt.RecentUse-now.Sub(b.last))
		}
	}
	if taken >= h.opt.MaxSessionsPerCredential {
		return false, wait
	}
	if h.starting == nil {
		h.starting = map[[32]byte]int{}
	}
	h.starting[c.hash]++
	ns.held = true
	return true, 0
}

// unreserve gives back the place ns holds, if it still holds one.
func (h *handler) unreserve(ns *newSession) {
	h.mu.Lock()
	h.unreserveLocked(ns)
	h.mu.Unlock()
}

// unreserveLocked is unreserve with h.mu held.
func (h *handler) unreserveLocked(ns *newSession) {
	if !ns.held {
		return
	}
	ns.held = false
	if h.starting[ns.c.hash]--; h.starting[ns.c.hash] <= 0 {
		delete(h.starting, ns.c.hash)
	}
}

// refuseFull answers a new session over the cap: 503, and when to retry.
func refuseFull(w http.ResponseWriter, wait time.Duration, limit int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Round(time.Second)/time.Second))))
	http.Error(w, "service unavailable: this token has "+strconv.Itoa(limit)+
		" sessions in use (a call in flight or one within the last minute); retry later or end one (DELETE)", http.StatusServiceUnavailable)
}

// begin and done bracket one request to a bound session; a session with a
// request in flight (a tool call, an open GET stream) is not idle. post
// says the request is a POST, which also holds off the idle timer.
func (h *handler) begin(b *binding, post bool) {
	h.mu.Lock()
	h.clock++
	b.used = h.clock
	b.last = time.Now()
	b.active++
	if post {
		b.posts++
		b.posted = b.last
	}
	h.mu.Unlock()
}

func (h *handler) done(b *binding, post bool) {
	h.mu.Lock()
	b.active--
	b.last = time.Now()
	if post {
		b.posts--
		b.posted = b.last
	}
	h.mu.Unlock()
}

// evictLocked enforces the cap on the sessions of nb's credential after nb
// (session nsid) was bound: it forgets the least recently used evictable
// sessions beyond the cap and returns them for the caller to close outside
// the lock. nb itself is never chosen, nor a session in use: sessions opened
// at once may leave the credential over the cap until they go idle.
// Caller holds h.mu.
func (h *handler) evictLocked(nsid string, nb *binding) map[string]*binding {
	now := time.Now()
	var mine []string
	total := 0
	for sid, b := range h.bound {
		if sid != nsid && b.hash == nb.hash {
			total++
			if h.evictable(b, now) {
				mine = append(mine, sid)
			}
		}
	}
	evicted := map[string]*binding{}
	for total+1 > h.opt.MaxSessionsPerCredential && len(mine) > 0 {
		victim := 0
		for i, sid := range mine {
			if h.bound[sid].used < h.bound[mine[victim]].used {
				victim = i
			}
		}
		sid := mine[victim]
		evicted[sid] = h.bound[sid]
		delete(h.bound, sid)
		mine = append(mine[:victim], mine[victim+1:]...)
		total--
	}
	return evicted
}
