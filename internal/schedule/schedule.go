// Package schedule arms cron triggers for jobs (docs/design/runs.md). It owns timing
// only: when a trigger is due it asks the daemon, through a FireFunc, to
// start the job, and the daemon decides whether the job is active (the
// firing is then skipped and counted, never queued).
//
// The loop is built on cron.Schedule.Next rather than cron.Cron so that a
// reload can keep an unchanged trigger's next fire time (its phase), and so
// that it runs on time.Now and timers alone, which testing/synctest fakes.
package schedule

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/robfig/cron/v3"
)

// Trigger kinds, as reported in Trigger.Kind.
const (
	KindCron       = "cron"       // a 5-field expression
	KindEvery      = "every"      // "@every <duration>"
	KindDescriptor = "descriptor" // "@hourly", "@daily", …
)

// maxCatchUp bounds how many periods the loop steps over when it wakes late,
// so that a clock jump cannot make it spin; past that it restarts from now.
const maxCatchUp = 10000

// Parse parses a schedule exactly as cron.ParseStandard does (5-field cron,
// "@hourly"-style descriptors, "@every <duration>", optional "CRON_TZ=" or
// "TZ=" prefix). Config validation uses it so that what validates is what
// arms.
func Parse(spec string) (sched cron.Schedule, err error) {
	// cron.ParseStandard slices with index -1 on "CRON_TZ=X" without a
	// following expression and panics; reject that shape up front and turn
	// any other panic from the library into an error rather than a crash.
	if (strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=")) && !strings.Contains(spec, " ") {
		return nil, fmt.Errorf("schedule: parse %q: time zone without an expression", spec)
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("schedule: parse %q: %v", spec, r)
		}
	}()
	sched, err = cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule: parse %q: %w", spec, err)
	}
	return sched, nil
}

// kindOf classifies a spec that Parse accepted.
func kindOf(spec string) string {
	s := spec
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		if i := strings.Index(s, " "); i >= 0 {
			s = strings.TrimSpace(s[i:])
		}
	}
	switch {
	case strings.HasPrefix(s, "@every"):
		return KindEvery
	case strings.HasPrefix(s, "@"):
		return KindDescriptor
	default:
		return KindCron
	}
}

// FireFunc is called when a job's trigger is due. It returns false when the
// job was active and the firing is skipped. It runs on the scheduler's
// goroutine without the scheduler's lock held: it may call Reconcile,
// Triggers or Next, but must not call Stop, and should return promptly since
// other due triggers wait for it.
type FireFunc func(job string) (fired bool)

// Trigger is the reported state of one armed trigger (the `triggers`
// operation); its wire shape is api.Trigger.
type Trigger = api.Trigger

// entry is one armed trigger. It is replaced, not mutated, when its spec
// changes, so a firing in flight can tell whether it still counts.
type entry struct {
	spec      string
	kind      string
	sched     cron.Schedule
	next      time.Time
	lastFired *time.Time
	fired     int
	skipped   int
}

// Scheduler arms one trigger per job and fires them from a single goroutine.
type Scheduler struct {
	fire FireFunc
	log  *slog.Logger

	mu      sync.Mutex
	entries map[string]*entry

	wake chan struct{} // buffered(1): the set of triggers changed
	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the loop ends

	startOnce sync.Once
	stopOnce  sync.Once
	started   bool // guarded by mu
}

// New returns a scheduler with no triggers. fire is called for due jobs once
// Start has been called; a nil logger uses slog.Default().
func New(fire FireFunc, logger *slog.Logger) *Scheduler {
	if logger == nil {
		logger = slog.Default()
	}
	return &Scheduler{
		fire:    fire,
		log:     logger,
		entries: make(map[string]*entry),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// Start starts the firing goroutine. Calling it again does nothing; calling
// it after Stop does nothing either.
func (s *Scheduler) Start() {
	s.startOnce.Do(func() {
		s.mu.Lock()
		select {
		case <-s.stop:
			s.mu.Unlock()
			return
		default:
		}
		s.started = true
		s.mu.Unlock()
		go s.loop()
	})
}

// Stop ends the firing goroutine and waits for it, including a FireFunc in
// progress. Triggers stay readable afterwards. Stop is idempotent.
func (s *Scheduler) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		close(s.stop)
		started := s.started
		s.mu.Unlock()
		if started {
			<-s.done
		}
	})
}

// Reconcile makes the armed triggers match specs (job name -> schedule). An
// unchanged spec keeps its registration, counters and next fire time; a
// changed one is re-armed from now; a job no longer listed is disarmed; a new
// one is armed. When any spec fails to parse nothing changes and the error
// (wrapping errcode.ErrConfigInvalid) names every bad job.
func (s *Scheduler) Reconcile(specs map[string]string) error {
	parsed := make(map[string]cron.Schedule, len(specs))
	var errs []error
	for _, job := range sortedKeys(specs) {
		sched, err := Parse(specs[job])
		if err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", job, err))
			continue
		}
		parsed[job] = sched
	}
	if len(errs) > 0 {
		return fmt.Errorf("schedule: reconcile: %w: %w", errors.Join(errs...), errcode.ErrConfigInvalid)
	}

	now := time.Now()
	s.mu.Lock()
	for job := range s.entries {
		if _, ok := specs[job]; !ok {
			delete(s.entries, job)
			s.log.Info("schedule: disarmed", logkey.Job, job)
		}
	}
	for job, sched := range parsed {
		spec := specs[job]
		if old, ok := s.entries[job]; ok && old.spec == spec {
			continue // keep the phase
		}
		e := &entry{spec: spec, kind: kindOf(spec), sched: sched, next: sched.Next(now)}
		s.entries[job] = e
		if e.next.IsZero() {
			s.log.Warn("schedule: armed but never fires", logkey.Job, job, logkey.Spec, spec)
		} else {
			s.log.Info("schedule: armed", logkey.Job, job, logkey.Spec, spec, logkey.NextFire, e.next)
		}
	}
	s.mu.Unlock()

	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending; the loop re-reads everything
	}
	return nil
}

// Triggers reports every armed trigger, sorted by job.
func (s *Scheduler) Triggers() []Trigger {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Trigger, 0, len(s.entries))
	for _, job := range sortedKeys(s.entries) {
		e := s.entries[job]
		t := Trigger{Job: job, Kind: e.kind, Spec: e.spec, NextFire: e.next, Fired: e.fired, Skipped: e.skipped}
		if e.lastFired != nil {
			lf := *e.lastFired
			t.LastFired = &lf
		}
		out = append(out, t)
	}
	return out
}

// Next returns the job's next fire time; ok is false when the job has no
// armed trigger. The time is zero when the schedule never fires again.
func (s *Scheduler) Next(job string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[job]
	if !ok {
		return time.Time{}, false
	}
	return e.next, true
}

// due is one firing picked under the lock and run outside it.
type due struct {
	job string
	e   *entry
	at  time.Time
}

func (s *Scheduler) loop() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		for _, d := range s.collectDue(time.Now()) {
			select {
			case <-s.stop:
				return
			default:
			}
			fired := s.fire(d.job)
			s.settle(d, fired, time.Now())
		}

		wait, armed := s.untilNext(time.Now())
		if armed {
			timer.Reset(wait)
		}
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// collectDue returns the triggers due at now, earliest first.
func (s *Scheduler) collectDue(now time.Time) []due {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []due
	for job, e := range s.entries {
		if !e.next.IsZero() && !e.next.After(now) {
			out = append(out, due{job: job, e: e, at: e.next})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].job < out[j].job
	})
	return out
}

// settle records a firing's outcome and advances the trigger from its due
// time, so an @every schedule keeps its phase; periods that passed while the
// loop was late are dropped, never queued.
func (s *Scheduler) settle(d due, fired bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[d.job] != d.e || !d.e.next.Equal(d.at) {
		// Reconcile replaced or removed the trigger while it fired; the new
		// registration has its own phase and counters.
		s.log.Info("schedule: trigger changed while firing", logkey.Job, d.job, logkey.Fired, fired)
		return
	}
	e := d.e
	if fired {
		e.fired++
		at := d.at
		e.lastFired = &at
		s.log.Info("schedule: fired", logkey.Job, d.job, logkey.Due, d.at)
	} else {
		e.skipped++
		s.log.Info("schedule: skipped, job active", logkey.Job, d.job, logkey.Due, d.at)
	}
	next := e.sched.Next(d.at)
	missed := 0
	for !next.IsZero() && !next.After(now) {
		if missed++; missed > maxCatchUp {
			next = e.sched.Next(now)
			break
		}
		next = e.sched.Next(next)
	}
	if missed > 0 {
		s.log.Warn("schedule: woke late, dropped missed firings", logkey.Job, d.job, logkey.Missed, missed, logkey.NextFire, next)
	}
	e.next = next
}

// untilNext returns how long until the earliest armed trigger; armed is
// false when none will ever fire.
func (s *Scheduler) untilNext(now time.Time) (wait time.Duration, armed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var earliest time.Time
	for _, e := range s.entries {
		if e.next.IsZero() {
			continue
		}
		if earliest.IsZero() || e.next.Before(earliest) {
			earliest = e.next
		}
	}
	if earliest.IsZero() {
		return 0, false
	}
	return max(earliest.Sub(now), 0), true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
