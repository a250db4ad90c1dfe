package schedule

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-dev/harness/internal/errcode"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a FireFunc that records, per job, the offsets from origin at
// which it was called, and answers with the result of decide.
type recorder struct {
	origin time.Time
	decide func(job string, n int) bool

	mu    sync.Mutex
	calls map[string][]time.Duration
}

func newRecorder() *recorder {
	return &recorder{origin: time.Now(), calls: map[string][]time.Duration{}}
}

func (r *recorder) fire(job string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[job] = append(r.calls[job], time.Since(r.origin))
	if r.decide != nil {
		return r.decide(job, len(r.calls[job]))
	}
	return true
}

func (r *recorder) got(job string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.calls[job]...)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func secs(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Second
	}
	return out
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// start builds a running scheduler inside the bubble and stops it when the
// test ends, before the bubble checks for leftover goroutines.
func start(t *testing.T, r *recorder, specs map[string]string) *Scheduler {
	t.Helper()
	s := New(r.fire, quiet())
	if err := s.Reconcile(specs); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// advance moves the fake clock by d and lets the scheduler settle.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func trigger(t *testing.T, s *Scheduler, job string) Trigger {
	t.Helper()
	for _, tr := range s.Triggers() {
		if tr.Job == job {
			return tr
		}
	}
	t.Fatalf("no trigger for %q in %+v", job, s.Triggers())
	return Trigger{}
}

func TestEveryFiresEachPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := start(t, r, map[string]string{"backup": "@every 10s"})
		advance(35 * time.Second)
		if got, want := r.got("backup"), secs(10, 20, 30); !equalDurations(got, want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
		tr := trigger(t, s, "backup")
		if tr.Fired != 3 || tr.Skipped != 0 || tr.Kind != KindEvery || tr.Spec != "@every 10s" {
			t.Fatalf("trigger = %+v", tr)
		}
		if tr.LastFired == nil || !tr.LastFired.Equal(r.origin.Add(30*time.Second)) {
			t.Fatalf("last fired = %v, want origin+30s", tr.LastFired)
		}
		if !tr.NextFire.Equal(r.origin.Add(40 * time.Second)) {
			t.Fatalf("next fire = %v, want origin+40s", tr.NextFire)
		}
	})
}

func TestSkippedFiringIsCountedAndNextPeriodFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.decide = func(_ string, n int) bool { return n != 2 } // active at 20s
		s := start(t, r, map[string]string{"sync": "@every 10s"})
		advance(35 * time.Second)
		if got, want := r.got("sync"), secs(10, 20, 30); !equalDurations(got, want) {
			t.Fatalf("asked at %v, want %v", got, want)
		}
		tr := trigger(t, s, "sync")
		if tr.Fired != 2 || tr.Skipped != 1 {
			t.Fatalf("fired=%d skipped=%d, want 2 and 1", tr.Fired, tr.Skipped)
		}
		if !tr.LastFired.Equal(r.origin.Add(30 * time.Second)) {
			t.Fatalf("last fired = %v, want origin+30s", tr.LastFired)
		}
	})
}

func TestReconcileUnchangedKeepsPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := start(t, r, map[string]string{"a": "@every 10s", "b": "@every 4s"})
		advance(7 * time.Second) // b fired at 4s
		if err := s.Reconcile(map[string]string{"a": "@every 10s", "b": "@every 4s"}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		synctest.Wait()
		if next, ok := s.Next("a"); !ok || !next.Equal(r.origin.Add(10*time.Second)) {
			t.Fatalf("Next(a) = %v %v, want origin+10s (not 17s)", next, ok)
		}
		advance(6 * time.Second) // t=13s
		if got, want := r.got("a"), secs(10); !equalDurations(got, want) {
			t.Fatalf("a fired at %v, want %v", got, want)
		}
		if got, want := r.got("b"), secs(4, 8, 12); !equalDurations(got, want) {
			t.Fatalf("b fired at %v, want %v", got, want)
		}
		if tr := trigger(t, s, "b"); tr.Fired != 3 {
			t.Fatalf("counters lost across reconcile: %+v", tr)
		}
	})
}

func TestReconcileChangedSpecReRegisters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := start(t, r, map[string]string{"a": "@every 10s"})
		advance(12 * time.Second) // fired at 10s
		if err := s.Reconcile(map[string]string{"a": "@every 5s"}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		synctest.Wait()
		tr := trigger(t, s, "a")
		if tr.Spec != "@every 5s" || tr.Fired != 0 || !tr.NextFire.Equal(r.origin.Add(17*time.Second)) {
			t.Fatalf("after change: %+v, want spec @every 5s, fresh counters, next origin+17s", tr)
		}
		advance(11 * time.Second) // t=23s
		if got, want := r.got("a"), secs(10, 17, 22); !equalDurations(got, want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	})
}

func TestReconcileRemovedNeverFiresAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := start(t, r, map[string]string{"gone": "@every 10s", "kept": "@every 10s"})
		advance(15 * time.Second)
		if err := s.Reconcile(map[string]string{"kept": "@every 10s"}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		advance(60 * time.Second)
		if got, want := r.got("gone"), secs(10); !equalDurations(got, want) {
			t.Fatalf("removed job fired at %v, want only %v", got, want)
		}
		if got := len(r.got("kept")); got != 7 {
			t.Fatalf("kept fired %d times, want 7", got)
		}
		if _, ok := s.Next("gone"); ok {
			t.Fatal("Next(gone) still armed")
		}
		if trs := s.Triggers(); len(trs) != 1 || trs[0].Job != "kept" {
			t.Fatalf("Triggers = %+v", trs)
		}
	})
}

func TestReconcileInvalidChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := start(t, r, map[string]string{"a": "@every 10s", "b": "@every 3s"})
		advance(5 * time.Second)
		before := s.Triggers()
		err := s.Reconcile(map[string]string{"a": "@every 1s", "c": "@hourly", "bad": "61 * * * *"})
		if err == nil {
			t.Fatal("Reconcile accepted an invalid spec")
		}
		if !errors.Is(err, errcode.ErrConfigInvalid) {
			t.Fatalf("error %v does not wrap ErrConfigInvalid", err)
		}
		after := s.Triggers()
		if len(after) != len(before) {
			t.Fatalf("triggers changed: %+v -> %+v", before, after)
		}
		for i := range before {
			if before[i].Job != after[i].Job || before[i].Spec != after[i].Spec || !before[i].NextFire.Equal(after[i].NextFire) {
				t.Fatalf("trigger changed: %+v -> %+v", before[i], after[i])
			}
		}
		advance(6 * time.Second) // t=11s: b (kept) at 6, 9; a at 10, phase unchanged
		if got, want := r.got("a"), secs(10); !equalDurations(got, want) {
			t.Fatalf("a fired at %v, want %v", got, want)
		}
		if got, want := r.got("b"), secs(3, 6, 9); !equalDurations(got, want) {
			t.Fatalf("b fired at %v, want %v", got, want)
		}
	})
}

func TestCronSpecFiresOnWallTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		// Arm mid-minute so that a relative schedule would be visibly wrong.
		time.Sleep(150 * time.Second)
		s := start(t, r, map[string]string{"every5": "*/5 * * * *", "utc": "CRON_TZ=UTC 30 2 * * *"})
		if tr := trigger(t, s, "every5"); tr.Kind != KindCron {
			t.Fatalf("kind = %q, want cron", tr.Kind)
		}
		advance(24 * time.Hour)
		got := r.got("every5")
		if len(got) != 24*12 {
			t.Fatalf("*/5 fired %d times in a day, want %d", len(got), 24*12)
		}
		for _, off := range got[:3] {
			at := r.origin.Add(off).In(time.Local)
			if at.Minute()%5 != 0 || at.Second() != 0 {
				t.Fatalf("*/5 fired at %v, not on a 5-minute boundary", at)
			}
		}
		if got[0] != 5*time.Minute {
			t.Fatalf("first */5 firing at %v after origin, want 5m", got[0])
		}
		utc := r.got("utc")
		if len(utc) != 1 {
			t.Fatalf("daily fired %d times, want 1", len(utc))
		}
		if at := r.origin.Add(utc[0]).UTC(); at.Hour() != 2 || at.Minute() != 30 || at.Second() != 0 {
			t.Fatalf("daily fired at %v, want 02:30:00 UTC", at)
		}
	})
}

func TestLateWakeFiresOnceAndKeepsPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		s := New(r.fire, quiet())
		if err := s.Reconcile(map[string]string{"a": "@every 10s"}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		// Start late: three periods have passed; only one firing may happen.
		time.Sleep(35 * time.Second)
		s.Start()
		defer s.Stop()
		synctest.Wait()
		if got, want := r.got("a"), secs(35); !equalDurations(got, want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
		if next, _ := s.Next("a"); !next.Equal(r.origin.Add(40 * time.Second)) {
			t.Fatalf("next = %v, want origin+40s (phase kept)", next)
		}
		if tr := trigger(t, s, "a"); tr.Fired != 1 || tr.Skipped != 0 {
			t.Fatalf("trigger = %+v, want one firing and nothing queued", tr)
		}
	})
}

func TestStopEndsLoopAndWaitsForFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		entered := make(chan struct{})
		var calls int
		s := New(func(string) bool {
			calls++
			close(entered)
			<-release
			return true
		}, quiet())
		if err := s.Reconcile(map[string]string{"a": "@every 1s"}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		s.Start()
		<-entered
		stopped := make(chan struct{})
		go func() { s.Stop(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned while a firing was in progress")
		default:
		}
		close(release)
		<-stopped
		advance(10 * time.Second)
		if calls != 1 {
			t.Fatalf("fired %d times, want 1 (none after Stop)", calls)
		}
		s.Stop() // idempotent
	})
}

func TestStopWithoutStart(t *testing.T) {
	s := New(func(string) bool { return true }, nil)
	s.Stop()
	s.Start() // after Stop: must not start a goroutine (goleak checks)
	s.Stop()
}

func TestParseAndKinds(t *testing.T) {
	for spec, kind := range map[string]string{
		"*/5 * * * *":           KindCron,
		"@hourly":               KindDescriptor,
		"@daily":                KindDescriptor,
		"@every 1m30s":          KindEvery,
		"CRON_TZ=UTC @every 1h": KindEvery,
		"TZ=UTC 0 9 * * 1-5":    KindCron,
	} {
		if _, err := Parse(spec); err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
		}
		if got := kindOf(spec); got != kind {
			t.Errorf("kindOf(%q) = %q, want %q", spec, got, kind)
		}
	}
	for _, spec := range []string{"", "* * * *", "0 0 * * * *", "@every", "@every soon", "@fortnightly", "CRON_TZ=UTC", "TZ=Nowhere/City * * * * *", "60 * * * *"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) accepted", spec)
		}
	}
}
