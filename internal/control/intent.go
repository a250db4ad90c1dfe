package control

import (
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/supervise"
)

// The enabled intent of every unit, and the profile and projects, are
// the daemon's state file: what the next daemon starts. One goroutine
// writes it (saver), so no actor waits for the disk.

// intentHook is the part of a unit's events that keeps its intent and, for
// a job, its firing state.
func (c *Control) intentHook(u *unit, ev supervise.Event) {
	if ev.Kind != supervise.EventState {
		return
	}
	st := u.sup.Status()
	c.noteIntent(u, st.Enabled)
	c.jobStateChanged(u, st.State)
}

// noteIntent records a unit's enabled intent and persists it on change.
// It runs on the unit's actor goroutine, so it never takes c.mu: a reload
// holding c.mu may be waiting for this very actor.
func (c *Control) noteIntent(u *unit, enabled bool) {
	// A daemon shutdown stops units without changing what the operator
	// intends: they start again with the next daemon. A unit that left
	// the config speaks no more for its name, which a new unit may reuse.
	if c.closing.Load() || u.gone.Load() || u.scratch { // a scratch harness is never brought back
		return
	}
	c.intentMu.Lock()
	if u.gone.Load() { // removed while we got here: its intent is gone too
		c.intentMu.Unlock()
		return
	}
	old, had := c.enabled[u.name]
	c.enabled[u.name] = enabled
	c.intentMu.Unlock()
	if !had || old != enabled {
		c.saveState()
	}
}

// saveState asks the saver to write the state file. Writes are coalesced
// and made by one goroutine, so a burst of changes (stop --all) can never
// land out of order, and no actor waits for a disk write.
func (c *Control) saveState() {
	select {
	case c.dirty <- struct{}{}:
	default: // a write is already due and will see this change
	}
}

// saver writes the state file whenever it is dirty, until stop is closed.
func (c *Control) saver(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-c.dirty:
			c.writeState()
		}
	}
}

// writeState snapshots the intent and writes it.
func (c *Control) writeState() {
	if c.opt.State == nil {
		return
	}
	c.mu.RLock()
	st := State{Enabled: map[string]bool{}, Profile: c.profile, Projects: map[string]string{}}
	for name, path := range c.unrestored {
		st.Projects[name] = path
	}
	for name, p := range c.projects {
		st.Projects[name] = p.Path
	}
	c.mu.RUnlock()
	c.intentMu.Lock()
	for k, v := range c.enabled {
		st.Enabled[k] = v
	}
	c.intentMu.Unlock()
	if err := c.opt.State.Save(st); err != nil {
		c.log.Error("save state", logkey.Err, err)
	}
}
