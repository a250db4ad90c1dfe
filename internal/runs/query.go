package runs

import (
	"context"
	"fmt"
	"slices"
)

// Reading the history: a unit's runs, its latest, one run, and waiting
// for a run to end. Every read copies what it returns.

// List returns the retained runs of unit ("" = every unit), oldest first
// (newest last); limit > 0 keeps only the newest limit.
func (s *Store) List(unit string, limit int) []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []uint64
	if unit != "" {
		ids = s.byUnit[unit]
	} else {
		ids = make([]uint64, 0, len(s.runs))
		for id := range s.runs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	if limit > 0 && len(ids) > limit {
		ids = ids[len(ids)-limit:]
	}
	out := make([]Run, 0, len(ids))
	for _, id := range ids {
		out = append(out, cloneRun(*s.runs[id]))
	}
	return out
}

// Latest returns the newest of unit's last limit runs that skip does not
// pass over, copying only that one: List copies every run it returns, and
// a hold check reads one run of every unit after every run's end (1,000
// of each in a stop --all) while exits wait for the same lock. skip sees
// a shallow copy and must not keep it.
func (s *Store) Latest(unit string, limit int, skip func(Run) bool) (Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byUnit[unit]
	if limit > 0 && len(ids) > limit {
		ids = ids[len(ids)-limit:]
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if r := *s.runs[ids[i]]; !skip(r) {
			return cloneRun(r), true
		}
	}
	return Run{}, false
}

// Get returns the retained run id.
func (s *Store) Get(id uint64) (Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return Run{}, false
	}
	return cloneRun(*r), true
}

// Wait returns the run once it has ended, or ctx's error, or ErrClosed
// when the store closes first.
func (s *Store) Wait(ctx context.Context, id uint64) (Run, error) {
	s.mu.Lock()
	r, err := s.lookup(id)
	if err != nil {
		s.mu.Unlock()
		return Run{}, fmt.Errorf("runs: wait for %d: %w", id, err)
	}
	if r.Ended() {
		s.mu.Unlock()
		return cloneRun(*r), nil
	}
	w, ok := s.waiters[id]
	if !ok {
		w = &waiter{done: make(chan struct{})}
		s.waiters[id] = w
	}
	s.mu.Unlock()
	select {
	case <-w.done:
		return cloneRun(w.run), nil
	case <-ctx.Done():
		return Run{}, fmt.Errorf("runs: wait for %d: %w", id, ctx.Err())
	case <-s.closed:
		return Run{}, fmt.Errorf("runs: wait for %d: %w", id, ErrClosed)
	}
}
