package schedule

import (
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestDecideTable(t *testing.T) {
	for _, c := range []struct {
		policy         string
		active, queued bool
		want           Action
	}{
		{"skip", false, false, Run},
		{"queue", false, true, Run},
		{"replace", false, false, Run},
		{"skip", true, false, Skip},
		{"", true, false, Skip},
		{"queue", true, false, Queue},
		{"queue", true, true, Skip},
		{"replace", true, false, Replace},
		{"replace", true, true, Replace},
	} {
		if got := Decide(c.policy, c.active, c.queued); got != c.want {
			t.Errorf("Decide(%q, active=%v, queued=%v) = %s, want %s", c.policy, c.active, c.queued, got, c.want)
		}
	}
}

func TestMissedCountsFiringsBetweenLastAndNow(t *testing.T) {
	hourly, _ := Parse("@every 1h")
	daily, _ := Parse("0 3 * * *")
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.Local)
	for _, c := range []struct {
		name      string
		sched     interface{ Next(time.Time) time.Time }
		last, now time.Time
		n         int
		first     time.Time
	}{
		{"nothing on record", hourly, time.Time{}, t0.Add(5 * time.Hour), 0, time.Time{}},
		{"not due yet", hourly, t0, t0.Add(59 * time.Minute), 0, time.Time{}},
		{"three missed", hourly, t0, t0.Add(3*time.Hour + 30*time.Minute), 3, t0.Add(time.Hour)},
		{"daily, down over one 03:00", daily, t0, t0.Add(2 * time.Hour), 1, t0.Add(time.Hour)},
		{"daily, down for two days", daily, t0, t0.Add(49 * time.Hour), 3, t0.Add(time.Hour)},
	} {
		n, first := Missed(c.sched.(interface {
			Next(time.Time) time.Time
		}), c.last, c.now)
		if n != c.n || !first.Equal(c.first) {
			t.Errorf("%s: Missed = %d, %s; want %d, %s", c.name, n, first, c.n, c.first)
		}
	}
}

// simJob plays a job on the fake clock: each run lasts dur; the firing
// callback applies Decide to it exactly as control.fire does.
type simJob struct {
	policy string
	dur    time.Duration
	origin time.Time

	mu          sync.Mutex
	gen         int  // current run, 0 when idle
	queued      bool // a firing waits
	starts      []time.Duration
	skips       []time.Duration
	interrupted int
}

func (j *simJob) fire(string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch Decide(j.policy, j.gen != 0, j.queued) {
	case Skip:
		j.skips = append(j.skips, time.Since(j.origin))
		return false
	case Queue:
		j.queued = true
		return false
	case Replace:
		j.interrupted++
	}
	j.startLocked()
	return true
}

func (j *simJob) startLocked() {
	j.gen++
	gen := j.gen
	j.starts = append(j.starts, time.Since(j.origin))
	time.AfterFunc(j.dur, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.gen != gen {
			return // replaced
		}
		j.gen = 0
		if j.queued {
			j.queued = false
			j.startLocked()
		}
	})
}

// TestScenario_OnOverlapPoliciesOnAFakeClock runs a job that lasts 100s on
// an @every 1m schedule for five and a half minutes under each policy.
func TestScenario_OnOverlapPoliciesOnAFakeClock(t *testing.T) {
	m := time.Minute
	s := time.Second
	for _, c := range []struct {
		policy      string
		starts      []time.Duration
		skips       []time.Duration
		interrupted int
		fired       int // firings that started a run at once
	}{
		// 1:00 runs to 2:40; 2:00 skipped; 3:00 runs to 4:40; 4:00 skipped; 5:00 runs.
		{"skip", []time.Duration{m, 3 * m, 5 * m}, []time.Duration{2 * m, 4 * m}, 0, 3},
		// 2:00 waits and runs at 2:40 (to 4:20); 3:00 waits; 4:00 finds one
		// waiting and is skipped; 3:00's runs at 4:20; 5:00 waits.
		{"queue", []time.Duration{m, 2*m + 40*s, 4*m + 20*s}, []time.Duration{4 * m}, 0, 1},
		// Every firing stops the run before it.
		{"replace", []time.Duration{m, 2 * m, 3 * m, 4 * m, 5 * m}, nil, 4, 5},
	} {
		t.Run(c.policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := &simJob{policy: c.policy, dur: 100 * s, origin: time.Now()}
				sc := New(j.fire, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err := sc.Reconcile(map[string]string{"job": "@every 1m"}); err != nil {
					t.Fatal(err)
				}
				sc.Start()
				time.Sleep(5*m + 30*s)
				synctest.Wait()
				sc.Stop()
				j.mu.Lock()
				defer j.mu.Unlock()
				if !slices.Equal(j.starts, c.starts) || !slices.Equal(j.skips, c.skips) || j.interrupted != c.interrupted {
					t.Fatalf("starts %v skips %v interrupted %d; want %v %v %d", j.starts, j.skips, j.interrupted, c.starts, c.skips, c.interrupted)
				}
				tr := sc.Triggers()[0]
				if tr.Fired != c.fired || tr.Fired+tr.Skipped != 5 {
					t.Errorf("trigger fired %d skipped %d, want %d of 5 fired", tr.Fired, tr.Skipped, c.fired)
				}
			})
		})
	}
}
