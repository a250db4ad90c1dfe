package proctree

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// DefaultTrackInterval is how often a Tracker looks at /proc on its own,
// besides the passes its callers ask for.
const DefaultTrackInterval = time.Second

// passGap is the least time between two of a Tracker's own passes. Each
// pass reads all of /proc, and start --all of 1,000 units kicked one per
// Register back to back: two thirds of the daemon's CPU for the start.
const passGap = 50 * time.Millisecond

// Tracker attributes the daemon's descendants to the runs they belong to,
// for when there is no cgroup to do it (fallback mode). A pass reads every
// /proc/PID/stat and attributes each descendant of the daemon (by parent
// pid, through any number of re-parentings to the daemon as subreaper):
//
//   - a registered main process to its run;
//   - a process whose parent is attributed, to the parent's run;
//   - otherwise (an orphan the daemon adopted) to the run it was attributed
//     to in an earlier pass: snapshots are keyed by pid and start time, so
//     a reused pid never inherits anything;
//   - otherwise, while a run's main process lives, a process in its
//     process group or session (the ids cannot be reused while the main
//     process holds them).
//
// A run that Finish marked as over keeps nothing: whatever is still
// attributed to it is killed at every pass. When a Ledger is given, the
// members of each live run are recorded in it, so the next daemon can end
// them after a crash even without a marker.
type Tracker struct {
	self     int
	ledger   *Ledger
	logger   *slog.Logger
	interval time.Duration

	passMu       sync.Mutex // one pass at a time
	mu           sync.Mutex // guards the fields below
	runs         map[string]*trackedRun
	last         map[Ident]string // attribution of the last pass; replaced, never written
	begun, ended uint64           // passes started and finished

	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	started  bool
	stopOnce sync.Once
}

type trackedRun struct {
	main     Ident
	finished bool
	members  []Ident // live members at the last pass, main included
}

// NewTracker returns a Tracker that records members in ledger (nil: no
// record) and looks at /proc every interval (0: DefaultTrackInterval)
// once started.
func NewTracker(ledger *Ledger, logger *slog.Logger, interval time.Duration) *Tracker {
	if logger == nil {
		logger = slog.Default()
	}
	if interval <= 0 {
		interval = DefaultTrackInterval
	}
	return &Tracker{
		self: os.Getpid(), ledger: ledger, logger: logger, interval: interval,
		runs: map[string]*trackedRun{}, last: map[Ident]string{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start runs periodic passes until ctx ends or Stop is called. Passes
// happen only while some run is tracked.
func (t *Tracker) Start(ctx context.Context) {
	t.mu.Lock()
	if t.started {
		t.mu.Unlock()
		return
	}
	t.started = true
	t.mu.Unlock()
	go func() {
		defer close(t.done)
		tick := time.NewTicker(t.interval)
		defer tick.Stop()
		gap := time.NewTimer(passGap)
		defer gap.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.stop:
				return
			case <-tick.C:
			case <-t.kick:
			}
			t.mu.Lock()
			idle := len(t.runs) == 0
			t.mu.Unlock()
			if !idle {
				t.Refresh()
				gap.Reset(passGap)
				select {
				case <-ctx.Done():
					return
				case <-t.stop:
					return
				case <-gap.C:
				}
			}
		}
	}()
}

// Stop ends the goroutine started by Start and waits for it.
func (t *Tracker) Stop() {
	t.stopOnce.Do(func() { close(t.stop) })
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	if started {
		<-t.done
	}
}

// Register starts tracking the run key whose main process is pid, right
// after it was started (before anyone waited for it).
func (t *Tracker) Register(key string, pid int) error {
	id, err := IdentOf(pid)
	if err != nil {
		return err
	}
	t.mu.Lock()
	// The main is attributed through runs; t.last is a pass's own map,
	// read by a pass outside the lock, and so never written here.
	t.runs[key] = &trackedRun{main: id, members: []Ident{id}}
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}: // record the main process at the next pass (passGap)
	default:
	}
	return nil
}

// Finish marks the run key as over: from now on every pass kills what is
// still attributed to it, and forgets the run once nothing is.
func (t *Tracker) Finish(key string) {
	t.mu.Lock()
	if r := t.runs[key]; r != nil {
		r.finished = true
	}
	t.mu.Unlock()
}

// Members returns the live members of run key as of the last pass.
func (t *Tracker) Members(key string) []Ident {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.runs[key]; r != nil {
		return slices.Clone(r.members)
	}
	return nil
}

// Signal sends sig to every member of run key as of the last pass that is
// still the same process, and returns how many it hit.
func (t *Tracker) Signal(key string, sig syscall.Signal) int {
	return t.SignalOutside(key, 0, sig)
}

// Refresh makes sure a pass that began after the call has finished: it
// runs one, or waits for one that a concurrent caller began meanwhile.
func (t *Tracker) Refresh() {
	t.mu.Lock()
	want := t.begun + 1
	t.mu.Unlock()
	t.passMu.Lock()
	defer t.passMu.Unlock()
	t.mu.Lock()
	if t.ended >= want {
		t.mu.Unlock()
		return
	}
	t.begun++
	runs := make(map[string]trackedRun, len(t.runs))
	for k, r := range t.runs {
		runs[k] = *r
	}
	last := t.last
	t.mu.Unlock()

	attr := attribute(scan(nil), t.self, runs, last)

	members := map[string][]Ident{}
	for id, key := range attr {
		members[key] = append(members[key], id)
	}
	for _, m := range members {
		slices.SortFunc(m, func(a, b Ident) int { return a.PID - b.PID })
	}
	var doomed []Ident
	record := map[string][]Ident{}
	t.mu.Lock()
	t.last = attr
	for key, r := range t.runs {
		r.members = members[key]
		switch {
		case r.finished && len(r.members) == 0:
			delete(t.runs, key)
		case r.finished:
			doomed = append(doomed, r.members...)
		default:
			record[key] = r.members
		}
	}
	t.ended = t.begun
	t.mu.Unlock()

	for _, id := range doomed {
		if sent, err := SignalIdent(id, syscall.SIGKILL); err != nil {
			t.logger.Warn("proctree: kill leftover of a finished run", logkey.PID, id.PID, logkey.Err, err)
		} else if sent {
			t.logger.Info("proctree: killed a leftover of a finished run", logkey.PID, id.PID)
		}
	}
	if t.ledger != nil && len(record) > 0 {
		if err := t.ledger.SetMembers(record); err != nil {
			t.logger.Error("proctree: record run members", logkey.Err, err)
		}
	}
}

// attribute maps every live descendant of self that belongs to a run (see
// Tracker) to the run's key.
func attribute(procs []procInfo, self int, runs map[string]trackedRun, last map[Ident]string) map[Ident]string {
	byPID := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		byPID[p.pid] = p
	}
	mains := map[Ident]string{}
	leaders := map[int]string{} // pid of a live main process -> key
	for key, r := range runs {
		mains[r.main] = key
		if p, ok := byPID[r.main.PID]; ok && p.live() && p.start == r.main.Start {
			leaders[p.pid] = key
		}
	}
	type result struct {
		key  string
		ours bool // a descendant of self
	}
	memo := map[int]result{}
	var visit func(p procInfo, depth int) result
	visit = func(p procInfo, depth int) result {
		if r, ok := memo[p.pid]; ok {
			return r
		}
		memo[p.pid] = result{} // a cycle (never in a sane /proc) ends here
		var r result
		switch parent, ok := byPID[p.ppid]; {
		case p.ppid == self:
			r.ours = true
		case ok && depth < len(procs):
			pr := visit(parent, depth+1)
			r = result{key: pr.key, ours: pr.ours}
		}
		if r.ours {
			id := p.ident()
			switch {
			case mains[id] != "":
				r.key = mains[id]
			case r.key != "":
			case last[id] != "":
				r.key = last[id]
			case leaders[p.pgid] != "":
				r.key = leaders[p.pgid]
			case leaders[p.sid] != "":
				r.key = leaders[p.sid]
			}
		}
		memo[p.pid] = r
		return r
	}
	out := map[Ident]string{}
	for _, p := range procs {
		if !p.live() {
			continue
		}
		if r := visit(p, 0); r.ours && r.key != "" {
			out[p.ident()] = r.key
		}
	}
	return out
}

// SignalOutside is Signal for the members of run key that are not in
// process group pgid (0: none skipped), for a caller that signalled that
// group already.
func (t *Tracker) SignalOutside(key string, pgid int, sig syscall.Signal) int {
	n := 0
	for _, id := range t.Members(key) {
		if pgid > 0 {
			if st, err := readStat(id.PID); err == nil && st.start == id.Start && st.pgid == pgid {
				continue
			}
		}
		sent, err := SignalIdent(id, sig)
		if err != nil {
			t.logger.Warn("proctree: signal tracked process", logkey.PID, id.PID, logkey.Signal, sig.String(), logkey.Err, err)
		}
		if sent {
			n++
		}
	}
	return n
}
