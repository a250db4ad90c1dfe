package hold

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func at(s string) time.Time {
	t, err := time.ParseInLocation("Mon 2006-01-02 15:04", s, time.UTC)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseHoursRejectsWhatItCannotMean(t *testing.T) {
	for _, bad := range []string{"", "Mon-Fri", "Mon-Fri 8-19", "Mon-Fry 08:00-19:00", "25:00-26:00", "08:00-08:00", "Mon-Fri 08:60-19:00"} {
		if _, err := ParseHours(bad); err == nil {
			t.Errorf("ParseHours(%q) accepted", bad)
		}
	}
	for _, good := range []string{"Mon-Fri 08:00-19:00", "Sat,Sun 10:00-14:00", "08:00-19:00", "Fri-Mon 22:00-06:00", "mon 9:00-24:00"} {
		if _, err := ParseHours(good); err != nil {
			t.Errorf("ParseHours(%q): %v", good, err)
		}
	}
}

func TestHoursOpenAndNextAcrossBoundaries(t *testing.T) {
	h, _ := ParseHours("Mon-Fri 08:00-19:00")
	for _, c := range []struct {
		now  string
		open bool
		next string
	}{
		{"Mon 2026-11-30 07:59", false, "Mon 2026-11-30 08:00"},
		{"Mon 2026-11-30 08:00", true, "Mon 2026-11-30 19:00"},
		{"Fri 2026-12-04 18:59", true, "Fri 2026-12-04 19:00"},
		{"Fri 2026-12-04 19:00", false, "Mon 2026-12-07 08:00"},
		{"Sat 2026-12-05 12:00", false, "Mon 2026-12-07 08:00"},
	} {
		now := at(c.now)
		if got := h.Open(now); got != c.open {
			t.Errorf("%s: open %v, want %v", c.now, got, c.open)
		}
		if got := h.Next(now); !got.Equal(at(c.next)) {
			t.Errorf("%s: next %s, want %s", c.now, got, c.next)
		}
	}
	night, _ := ParseHours("Fri 22:00-06:00")
	if !night.Open(at("Sat 2026-12-05 05:59")) || night.Open(at("Sat 2026-12-05 06:00")) || night.Open(at("Fri 2026-12-04 21:59")) {
		t.Error("an overnight window opens on its day and closes the next morning")
	}
}

func TestEvaluateBudgetRefusesTheNPlusFirstRun(t *testing.T) {
	now := at("Tue 2026-12-01 15:00")
	l := Limits{MaxRunsPerDay: 3}
	for runs := range 3 {
		if h := Evaluate(now, l, Usage{RunsToday: runs}); h != nil {
			t.Fatalf("run %d of 3 held: %+v", runs+1, h)
		}
	}
	h := Evaluate(now, l, Usage{RunsToday: 3})
	if h == nil || h.Reason != api.HoldBudget || !h.Until.Equal(at("Wed 2026-12-02 00:00")) {
		t.Fatalf("the 4th run: %+v", h)
	}
	if h := Evaluate(now, Limits{Agent: true}, Usage{OtherAgents: 2, MaxAgents: 2}); h == nil || h.Reason != api.HoldBudget || h.Until != nil {
		t.Fatalf("a third agent over max_concurrent_agents 2: %+v", h)
	}
	if h := Evaluate(now, Limits{}, Usage{OtherAgents: 2, MaxAgents: 2}); h != nil {
		t.Fatalf("a harness that runs no agent is not counted: %+v", h)
	}
}

// TestScenario_HoursHoldAndReleaseAcrossAWindowBoundary runs Watch on a
// fake clock from Friday evening to Monday morning: the harness is free
// until 19:00, held over the weekend until Monday 08:00, then free again,
// each change seen at its boundary.
func TestScenario_HoursHoldAndReleaseAcrossAWindowBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := ParseHours("Mon-Fri 08:00-19:00")
		l := Limits{Hours: h}
		// The bubble starts at 2000-01-01 00:00 UTC, a Saturday: move to
		// Friday 2000-01-07 18:00.
		time.Sleep(at("Fri 2000-01-07 18:00").Sub(time.Now()))
		type change struct {
			at   time.Time
			hold *api.Hold
		}
		var (
			mu      sync.Mutex
			changes []change
			last    = &api.Hold{Reason: "unset"}
		)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, nil, func(now time.Time) time.Time {
				now = now.UTC()
				hd := Evaluate(now, l, Usage{})
				mu.Lock()
				if !Same(hd, last) {
					changes = append(changes, change{now, hd})
					last = hd
				}
				mu.Unlock()
				return NextChange(now, l)
			})
		}()
		time.Sleep(at("Mon 2000-01-10 09:00").Sub(time.Now()))
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(changes) != 3 {
			t.Fatalf("changes: %+v", changes)
		}
		if changes[0].hold != nil || !changes[0].at.Equal(at("Fri 2000-01-07 18:00")) {
			t.Errorf("first: %+v", changes[0])
		}
		if c := changes[1]; c.hold == nil || c.hold.Reason != api.HoldHours || !c.at.Equal(at("Fri 2000-01-07 19:00")) || !c.hold.Until.Equal(at("Mon 2000-01-10 08:00")) {
			t.Errorf("held at the window's end until Monday: %+v %+v", c, c.hold)
		}
		if c := changes[2]; c.hold != nil || !c.at.Equal(at("Mon 2000-01-10 08:00")) {
			t.Errorf("released at Monday 08:00: %+v", c)
		}
	})
}

// TestScenario_ABurstOfWakesIsOneEvaluation: a thousand runs ending at
// once (stop --all) wake the watcher a thousand times; it evaluates once
// for them all, WakeGap after the last evaluation, not a thousand times.
func TestScenario_ABurstOfWakesIsOneEvaluation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			ticks []time.Time
		)
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(ticks)
		}
		wake := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, wake, func(now time.Time) time.Time {
				mu.Lock()
				ticks = append(ticks, now)
				mu.Unlock()
				return time.Time{}
			})
		}()
		defer func() { cancel(); <-done }()
		synctest.Wait()
		start := time.Now()
		for range 1000 {
			select {
			case wake <- struct{}{}:
			default:
			}
			synctest.Wait()
		}
		if n := count(); n != 1 {
			t.Fatalf("%d evaluations before the gap ended, want the first alone", n)
		}
		time.Sleep(WakeGap)
		synctest.Wait()
		if n := count(); n != 2 {
			t.Fatalf("%d evaluations after the gap, want 2", n)
		}
		if got := ticks[1].Sub(start); got != WakeGap {
			t.Errorf("the burst was served %v after the first evaluation, want %v", got, WakeGap)
		}
		// A wake after the gap is served at once.
		time.Sleep(time.Second)
		wake <- struct{}{}
		synctest.Wait()
		if n := count(); n != 3 {
			t.Fatalf("a lone wake: %d evaluations, want 3", n)
		}
	})
}
