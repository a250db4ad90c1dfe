package kaudit

import (
	"sync"
	"time"
)

// Denial is one file refusal of a watched run.
type Denial struct {
	Path     string   // see Access.Path
	Blockers []string // the rights missing
	Time     time.Time
}

// Bounds of what the tracker keeps for records it cannot place yet.
const (
	// claimSlack: a domain's allocation record is stamped by a coarse
	// clock, up to a tick behind the one that stamped the run's start.
	claimSlack = 100 * time.Millisecond
	// unclaimedFor is how long a domain whose pid no run has stays
	// claimable: a record can come before the daemon registered the
	// run's pid (the shim is quicker than the actor).
	unclaimedFor = 30 * time.Second
	// maxPending bounds the denials kept per domain not yet placed.
	maxPending = 64
	// maxDomains bounds the domains remembered; beyond it, those of
	// other programs are forgotten first.
	maxDomains = 4096
)

// tracker places Landlock records on watched runs: a domain's records
// go to the run whose main pid allocated it. It is safe for concurrent
// use: the reading goroutine feeds it, actors watch and unwatch.
type tracker struct {
	now func() time.Time

	mu      sync.Mutex
	runs    map[int]*watch
	domains map[uint64]*domain
}

// watch is one run followed: its main pid, when it was spawned, and what
// to tell.
type watch struct {
	pid   int
	since time.Time
	on    func(Denial)
}

type domain struct {
	known   bool // its allocation record was seen: pid is set
	pid     int
	at      time.Time // its allocation record's time
	owner   *watch    // the run it belongs to, once placed
	foreign bool      // not a run's (or its run ended): its records are dropped
	seen    time.Time // when the tracker first heard of it
	pending []Denial  // denials before it was placed
}

func newTracker(now func() time.Time) *tracker {
	return &tracker{now: now, runs: map[int]*watch{}, domains: map[uint64]*domain{}}
}

// delivery is a denial to tell, outside the lock.
type delivery struct {
	on func(Denial)
	d  Denial
}

func tell(ds []delivery) {
	for _, d := range ds {
		d.on(d.d)
	}
}

// add follows the run whose main process is pid, spawned at since, until
// the returned stop. Records that came before it are placed now.
func (t *tracker) add(pid int, since time.Time, on func(Denial)) (stop func()) {
	w := &watch{pid: pid, since: since, on: on}
	t.mu.Lock()
	t.runs[pid] = w
	var ds []delivery
	for _, d := range t.domains {
		if d.known && d.pid == pid && d.owner == nil && !d.foreign && !d.at.Before(since.Add(-claimSlack)) {
			ds = append(ds, t.claimLocked(d, w)...)
		}
	}
	t.mu.Unlock()
	tell(ds)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.runs[pid] == w {
			delete(t.runs, pid)
		}
		for _, d := range t.domains {
			if d.owner == w {
				d.owner, d.foreign = nil, true
			}
		}
	}
}

func (t *tracker) claimLocked(d *domain, w *watch) []delivery {
	d.owner = w
	ds := make([]delivery, 0, len(d.pending))
	for _, p := range d.pending {
		ds = append(ds, delivery{w.on, p})
	}
	d.pending = nil
	return ds
}

// access takes a denial record.
func (t *tracker) access(a Access) {
	den := Denial{Path: a.Path, Blockers: a.Blockers, Time: a.Time}
	t.mu.Lock()
	d := t.domainLocked(a.Domain)
	var on func(Denial)
	switch {
	case d.owner != nil:
		on = d.owner.on
	case d.foreign:
	case len(d.pending) < maxPending:
		d.pending = append(d.pending, den)
	}
	t.mu.Unlock()
	if on != nil {
		on(den)
	}
}

// domainRecord takes a domain's allocation or deallocation record.
func (t *tracker) domainRecord(r Domain) {
	t.mu.Lock()
	if !r.Allocated {
		delete(t.domains, r.ID)
		t.mu.Unlock()
		return
	}
	d := t.domainLocked(r.ID)
	var ds []delivery
	if !d.known {
		d.known, d.pid, d.at = true, r.PID, r.Time
		if w := t.runs[r.PID]; w != nil && !r.Time.Before(w.since.Add(-claimSlack)) {
			ds = t.claimLocked(d, w)
		}
	}
	t.mu.Unlock()
	tell(ds)
}

// domainLocked is the domain id, remembered from now on.
func (t *tracker) domainLocked(id uint64) *domain {
	if d := t.domains[id]; d != nil {
		return d
	}
	if len(t.domains) >= maxDomains {
		t.pruneLocked()
	}
	d := &domain{seen: t.now()}
	t.domains[id] = d
	return d
}

// expire gives up on domains no run claimed in time: another program's,
// or one whose allocation the daemon did not see (it started later).
func (t *tracker) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, d := range t.domains {
		if d.owner == nil && !d.foreign && now.Sub(d.seen) > unclaimedFor {
			d.foreign, d.pending = true, nil
		}
	}
}

// pruneLocked forgets the domains of other programs, then, if that is
// not enough, every domain not placed on a run.
func (t *tracker) pruneLocked() {
	for id, d := range t.domains {
		if d.foreign {
			delete(t.domains, id)
		}
	}
	if len(t.domains) < maxDomains {
		return
	}
	for id, d := range t.domains {
		if d.owner == nil {
			delete(t.domains, id)
		}
	}
}

// watching is how many runs are followed (tests).
func (t *tracker) watching() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runs)
}
