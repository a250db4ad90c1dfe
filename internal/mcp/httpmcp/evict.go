package httpmcp

// DefaultMaxSessionsPerCredential is how many HTTP sessions one token may
// hold at once. Clients that vanish without deleting their session (a killed
// process, a dropped laptop lid) would otherwise pile sessions up until the
// idle timeout; with the cap, a new session ends the token's least recently
// used one instead.
const DefaultMaxSessionsPerCredential = 32

// begin and done bracket one request to a bound session; a session with a
// request in flight (a tool call, an open GET stream) is not idle.
func (h *handler) begin(b *binding) {
	h.mu.Lock()
	h.clock++
	b.used = h.clock
	b.active++
	h.mu.Unlock()
}

func (h *handler) done(b *binding) {
	h.mu.Lock()
	b.active--
	h.mu.Unlock()
}

// evictLocked enforces the cap on the sessions of nb's credential after nb
// (session nsid) was bound: it forgets the least recently used sessions
// beyond the cap, idle ones first, and returns them for the caller to close
// outside the lock. nb itself is never chosen. Caller holds h.mu.
func (h *handler) evictLocked(nsid string, nb *binding) map[string]*binding {
	var mine []string
	for sid, b := range h.bound {
		if sid != nsid && b.hash == nb.hash {
			mine = append(mine, sid)
		}
	}
	evicted := map[string]*binding{}
	for len(mine)+1 > h.opt.MaxSessionsPerCredential && len(mine) > 0 {
		victim := 0
		for i, sid := range mine {
			if evictsFirst(h.bound[sid], h.bound[mine[victim]]) {
				victim = i
			}
		}
		sid := mine[victim]
		evicted[sid] = h.bound[sid]
		delete(h.bound, sid)
		mine = append(mine[:victim], mine[victim+1:]...)
	}
	return evicted
}

// evictsFirst orders eviction candidates: idle before busy, then least
// recently used first. The caller holds handler.mu.
func evictsFirst(a, b *binding) bool {
	if (a.active == 0) != (b.active == 0) {
		return a.active == 0
	}
	return a.used < b.used
}
