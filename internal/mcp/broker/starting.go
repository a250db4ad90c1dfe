package broker

import "context"

// WaitStarting returns once no upstream visible to project is starting, or
// when ctx ends. Starting is attached and not yet listed (handshaking), or
// configured and never attached nor failed (its process is being spawned).
// A session's first tools/list waits here, so that an agent started
// together with its upstreams sees their tools: a client that never
// re-lists would otherwise never see them.
func (b *Broker) WaitStarting(ctx context.Context, project string) {
	for {
		b.mu.Lock()
		starting := false
		for _, u := range b.visibleAll(project) {
			if u.startingLocked() {
				starting = true
				break
			}
		}
		changed := b.changedCh
		b.mu.Unlock()
		if !starting {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// startingLocked reports whether u is on its way up. Caller holds b.mu.
func (u *upstream) startingLocked() bool {
	if u.conn != nil {
		return !u.conn.failed && u.session == nil
	}
	return u.run == 0 && !u.listed && u.lastErr == ""
}

// name is how a person names u on the command line: KEY, or PROJECT/KEY
// for a project's upstream.
func (u *upstream) name() string {
	if u.project == "" {
		return u.key
	}
	return u.project + "/" + u.key
}
