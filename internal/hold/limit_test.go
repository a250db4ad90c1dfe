package hold

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func TestOnLimitDecidesParkStopOrIgnore(t *testing.T) {
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	reset := now.Add(20 * time.Second)
	cases := []struct {
		action     string
		reset      time.Time
		rnd        float64
		park, stop bool
		lo, hi     time.Time
	}{
		{LimitPark, reset, 0, true, false, reset, reset},
		{LimitPark, reset, 0.999, true, false, reset, reset.Add(time.Second)},                                                               // a twentieth of 20 s is below the 1 s floor
		{LimitPark, now.Add(2 * time.Hour), 0.5, true, false, now.Add(2*time.Hour + 30*time.Second), now.Add(2*time.Hour + 30*time.Second)}, // capped at a minute
		{LimitPark, time.Time{}, 0, true, false, now.Add(DefaultLimitWait), now.Add(DefaultLimitWait)},
		{LimitPark, now.Add(-30 * time.Second), 0, true, false, now, now}, // "resets 11:00pm" read at 23:00:30
		{LimitStop, reset, 0, false, true, time.Time{}, time.Time{}},
		{LimitIgnore, reset, 0, false, false, time.Time{}, time.Time{}},
	}
	for _, c := range cases {
		d := OnLimit(c.action, c.reset, now, c.rnd)
		if d.Park != c.park || d.Stop != c.stop || d.Until.Before(c.lo) || d.Until.After(c.hi) {
			t.Errorf("%s reset %v rnd %v: %+v, want park %v stop %v until in [%v, %v]", c.action, c.reset, c.rnd, d, c.park, c.stop, c.lo, c.hi)
		}
	}
}

// TestScenario_AUsageLimitHoldsUntilItsReset: on a fake clock, a harness
// parked on a usage limit resetting in 20 s (plus jitter) is held with
// that until, other holds wait behind it, and the watcher releases it at
// the reset: not before, not later.
func TestScenario_AUsageLimitHoldsUntilItsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		d := OnLimit(LimitPark, start.Add(20*time.Second), start, 0.5)
		use := Usage{LimitedUntil: d.Until, LimitNote: "Usage limit reached · resets 11:13pm"}
		var (
			mu      sync.Mutex
			changes []*api.Hold
			at      []time.Duration
			last    = &api.Hold{Reason: "unset"}
		)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, nil, func(now time.Time) time.Time {
				h := Evaluate(now, Limits{MaxRunsPerDay: 5}, use)
				mu.Lock()
				if !Same(h, last) {
					changes, at, last = append(changes, h), append(at, now.Sub(start)), h
				}
				mu.Unlock()
				if use.LimitedUntil.After(now) {
					return use.LimitedUntil
				}
				return NextChange(now, Limits{MaxRunsPerDay: 5})
			})
		}()
		time.Sleep(time.Minute)
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(changes) != 2 {
			t.Fatalf("changes %+v at %v", changes, at)
		}
		if h := changes[0]; h == nil || h.Reason != api.HoldUsageLimit || !h.Until.Equal(d.Until) || at[0] != 0 || h.Note == "" {
			t.Errorf("held at once until the reset: %+v at %v", h, at[0])
		}
		if changes[1] != nil || at[1] != d.Until.Sub(start) || at[1] < 20*time.Second || at[1] > 21*time.Second {
			t.Errorf("released at %v (reset + jitter %v): %+v", at[1], d.Until.Sub(start), changes[1])
		}
	})
}

func TestRepeatsTripOnTheNthSameCallInARow(t *testing.T) {
	var r Repeats
	for i, step := range []struct {
		run     uint64
		call    string
		n       int
		tripped bool
	}{
		{1, `Bash {"command":"ls"}`, 1, false},
		{1, `Bash {"command":"ls"}`, 2, false},
		{1, `Bash {"command":"pwd"}`, 1, false}, // another call: counted anew
		{1, `Bash {"command":"pwd"}`, 2, false},
		{1, `Bash {"command":"pwd"}`, 3, true},
		{2, `Bash {"command":"pwd"}`, 1, false}, // a new run starts over
	} {
		r = r.Next(step.run, step.call)
		if r.N != step.n || r.Tripped(3) != step.tripped {
			t.Errorf("step %d: %+v tripped %v", i, r, r.Tripped(3))
		}
	}
	if r.Tripped(0) {
		t.Error("loop_guard 0 trips")
	}
}

func TestEvaluateCostBudgetHoldsUntilMidnight(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	l := Limits{MaxCostPerDay: 2.5}
	if h := Evaluate(now, l, Usage{CostToday: 2.49}); h != nil {
		t.Fatalf("held below the budget: %+v", h)
	}
	h := Evaluate(now, l, Usage{CostToday: 2.5})
	if h == nil || h.Reason != api.HoldBudget || !h.Until.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)) || h.Note != "max_cost_per_day $2.5 reached ($2.5000 spent today)" {
		t.Fatalf("%+v", h)
	}
	if n := NextChange(now, l); !n.Equal(*h.Until) {
		t.Errorf("next change %v", n)
	}
}
