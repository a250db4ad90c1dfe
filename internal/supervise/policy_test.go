package supervise

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

func code(n int) *int { return &n }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestShouldRestart(t *testing.T) {
	clean := Exit{Code: code(0)}
	fail := Exit{Code: code(3)}
	sig := Exit{Signal: "SIGKILL"}
	spawn := Exit{SpawnFailed: true}
	cases := []struct {
		p    Policy
		e    Exit
		want bool
	}{
		{RestartAlways, clean, true},
		{RestartAlways, fail, true},
		{RestartUnlessStopped, clean, true},
		{RestartUnlessStopped, sig, true},
		{RestartOnFailure, clean, false},
		{RestartOnFailure, fail, true},
		{RestartOnFailure, sig, true},
		{RestartOnFailure, spawn, true},
		{RestartNo, fail, false},
		{RestartNo, clean, false},
		{RestartNo, spawn, false},
		{Policy("bogus"), fail, false},
	}
	for _, c := range cases {
		if got := ShouldRestart(c.p, c.e); got != c.want {
			t.Errorf("ShouldRestart(%s, %+v) = %v, want %v", c.p, c.e, got, c.want)
		}
	}
}

func TestDecideSuppressed(t *testing.T) {
	cases := []struct {
		name  string
		p     Policy
		e     Exit
		state State
	}{
		{"on-failure clean exit stops", RestartOnFailure, Exit{Code: code(0), At: t0}, StateStopped},
		{"no with failure fails", RestartNo, Exit{Code: code(1), At: t0}, StateFailed},
		{"no with clean exit stops", RestartNo, Exit{Code: code(0), At: t0}, StateStopped},
		{"no with signal fails", RestartNo, Exit{Signal: "SIGTERM", At: t0}, StateFailed},
		{"no with spawn failure fails", RestartNo, Exit{SpawnFailed: true, At: t0}, StateFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.p, History{}, c.e, time.Second, Limits{}, nil)
			if d.Restart || d.State != c.state || d.Latched {
				t.Fatalf("got %+v, want no restart, state %s, not latched", d, c.state)
			}
		})
	}
}

// shrunk limits used by the table tests: 3 exits in 10s, cap 8s, no jitter.
var testLimits = Limits{CrashThreshold: 3, CrashWindow: 10 * time.Second, MaxDelay: 8 * time.Second,
	MinBackoff: time.Second, Jitter: -1, HealthyAfter: 5 * time.Second, MaxAttempts: 3}

func TestDecideCrashLoop(t *testing.T) {
	h := History{}
	at := t0
	type step struct {
		state   State
		delay   time.Duration
		latched bool
		reason  string
	}
	want := []step{
		{StateRestarting, 500 * time.Millisecond, false, ""},
		{StateRestarting, 500 * time.Millisecond, false, ""},
		{StateDegraded, 2 * time.Second, false, "degraded: 3 exits in 10s"}, // base 1s doubled once
		{StateDegraded, 4 * time.Second, false, ""},
		{StateDegraded, 8 * time.Second, false, ""},
		{StateFailed, 0, true, "failed: giving up after 3 attempts"},
	}
	for i, w := range want {
		d := Decide(RestartAlways, h, Exit{Code: code(1), StartedAt: at, At: at.Add(100 * time.Millisecond)},
			500*time.Millisecond, testLimits, nil)
		if d.State != w.state || d.Delay != w.delay || d.Latched != w.latched || d.Reason != w.reason ||
			d.Restart == w.latched {
			t.Fatalf("step %d: got %+v, want %+v", i, d, w)
		}
		h = d.History
		at = at.Add(100*time.Millisecond + d.Delay)
	}
}

func TestDecideWindowPrunesOldExits(t *testing.T) {
	// Exits spread wider than the window never degrade.
	h := History{}
	at := t0
	for i := range 10 {
		d := Decide(RestartAlways, h, Exit{Code: code(1), StartedAt: at, At: at.Add(time.Second)}, 4*time.Second, testLimits, nil)
		if d.State != StateRestarting || d.Delay != 4*time.Second {
			t.Fatalf("exit %d: got %+v", i, d)
		}
		if len(d.History.Exits) > 3 {
			t.Fatalf("exit %d: history not pruned: %d exits", i, len(d.History.Exits))
		}
		h = d.History
		at = at.Add(time.Second + d.Delay)
	}
}

func TestDecideHealthyRunResets(t *testing.T) {
	h := History{Exits: []time.Time{t0, t0, t0, t0}, Degraded: true, Attempts: 2}
	start := t0.Add(time.Second)
	d := Decide(RestartAlways, h, Exit{Code: code(1), StartedAt: start, At: start.Add(testLimits.HealthyAfter)},
		time.Second, testLimits, nil)
	if d.State != StateRestarting || d.Delay != time.Second || d.History.Degraded || len(d.History.Exits) != 1 {
		t.Fatalf("healthy run did not reset: %+v", d)
	}
	// One tick short of healthy keeps the degraded history.
	d = Decide(RestartAlways, h, Exit{Code: code(1), StartedAt: start, At: start.Add(testLimits.HealthyAfter - 1)},
		time.Second, testLimits, nil)
	if d.State != StateDegraded || d.History.Attempts != 3 {
		t.Fatalf("short run reset the history: %+v", d)
	}
}

func TestDecideSpawnFailureCountsAsAttempt(t *testing.T) {
	h := History{}
	for i := range testLimits.CrashThreshold {
		d := Decide(RestartOnFailure, h, Exit{SpawnFailed: true, At: t0.Add(time.Duration(i) * time.Millisecond)},
			0, testLimits, nil)
		if !d.Restart {
			t.Fatalf("attempt %d: spawn failure not retried: %+v", i, d)
		}
		h = d.History
	}
	if !h.Degraded {
		t.Fatalf("spawn failures did not degrade: %+v", h)
	}
}

func TestBackoff(t *testing.T) {
	lim := Limits{MinBackoff: time.Second, MaxDelay: 5 * time.Minute, Jitter: 0.2}
	cases := []struct {
		delay   time.Duration
		attempt int
		r       float64
		want    time.Duration
	}{
		{2 * time.Second, 1, 0.5, 4 * time.Second},
		{2 * time.Second, 3, 0.5, 16 * time.Second},
		{0, 1, 0.5, 2 * time.Second}, // MinBackoff is the base
		{2 * time.Second, 1, 0, 3200 * time.Millisecond},
		{2 * time.Second, 1, 1, 4800 * time.Millisecond},
		{2 * time.Second, 20, 0.5, 5 * time.Minute},
		{2 * time.Second, 20, 0, 4 * time.Minute},
		{2 * time.Second, 20, 0.999, 5 * time.Minute}, // jitter never exceeds the cap
		{2 * time.Second, 1000, 0.5, 5 * time.Minute}, // no overflow
	}
	for _, c := range cases {
		got := Backoff(c.delay, c.attempt, lim, func() float64 { return c.r })
		if got != c.want {
			t.Errorf("Backoff(%s, %d, r=%v) = %s, want %s", c.delay, c.attempt, c.r, got, c.want)
		}
	}
	if got := Backoff(time.Second, 2, Limits{Jitter: -1}, nil); got != 4*time.Second {
		t.Errorf("no jitter: got %s", got)
	}
}

func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.WithDefaults()
	if l.CrashThreshold != 5 || l.CrashWindow != time.Minute || l.MaxDelay != 5*time.Minute ||
		l.HealthyAfter != 30*time.Second || l.MaxAttempts != 10 || l.Jitter != 0.2 || l.StopGrace != 10*time.Second {
		t.Fatalf("defaults: %+v", l)
	}
}

// TestPolicyTimeline drives the pure policy through a crash loop on a fake
// clock: the sum of waits matches the backoff schedule, the unit gives up
// after MaxAttempts, and a later healthy run resets everything.
func TestPolicyTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := Limits{CrashThreshold: 5, CrashWindow: time.Minute, MaxDelay: time.Minute,
			MinBackoff: time.Second, Jitter: -1, HealthyAfter: 30 * time.Second, MaxAttempts: 4}
		begin := time.Now()
		var h History
		var states []State
		for {
			started := time.Now()
			time.Sleep(200 * time.Millisecond) // the run
			d := Decide(RestartAlways, h, Exit{Code: code(2), StartedAt: started, At: time.Now()}, time.Second, lim, nil)
			states = append(states, d.State)
			if !d.Restart {
				if d.State != StateFailed || !d.Latched {
					t.Fatalf("ended in %+v", d)
				}
				break
			}
			h = d.History
			time.Sleep(d.Delay)
		}
		// 4 plain restarts at 1s, degraded at the 5th exit: 2,4,8,16s, then give up.
		wantStates := []State{StateRestarting, StateRestarting, StateRestarting, StateRestarting,
			StateDegraded, StateDegraded, StateDegraded, StateDegraded, StateFailed}
		if len(states) != len(wantStates) {
			t.Fatalf("states %v, want %v", states, wantStates)
		}
		for i := range states {
			if states[i] != wantStates[i] {
				t.Fatalf("states %v, want %v", states, wantStates)
			}
		}
		want := 9*200*time.Millisecond + 4*time.Second + (2+4+8+16)*time.Second
		if got := time.Since(begin); got != want {
			t.Fatalf("timeline took %s, want %s", got, want)
		}

		// After the latch an explicit start clears the history; a run that
		// stays up past HealthyAfter restarts with the plain delay.
		h = History{}
		for range 6 {
			started := time.Now()
			time.Sleep(time.Second)
			d := Decide(RestartAlways, h, Exit{Code: code(2), StartedAt: started, At: time.Now()}, time.Second, lim, nil)
			h = d.History
			time.Sleep(d.Delay)
		}
		if !h.Degraded {
			t.Fatalf("not degraded after 6 fast exits: %+v", h)
		}
		started := time.Now()
		time.Sleep(lim.HealthyAfter)
		d := Decide(RestartAlways, h, Exit{Code: code(2), StartedAt: started, At: time.Now()}, time.Second, lim, nil)
		if d.State != StateRestarting || d.Delay != time.Second || d.History.Degraded {
			t.Fatalf("healthy run did not reset the backoff: %+v", d)
		}
	})
}

// TestScenario_UpstreamThatNeverInitializesFails follows an upstream whose
// every run is cut off by the broker's 30 s connect timeout. Counted as
// ordinary exits, these runs are "healthy" (up for 30 s) and far apart, so
// the unit restarted every 30 s forever; as failed starts it degrades after
// CrashThreshold of them in a row and fails after MaxAttempts.
func TestScenario_UpstreamThatNeverInitializesFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := Limits{CrashThreshold: 5, CrashWindow: time.Minute, MaxDelay: 5 * time.Minute,
			MinBackoff: time.Second, Jitter: -1, HealthyAfter: 30 * time.Second, MaxAttempts: 10}
		const connectTimeout = 30 * time.Second
		run := func(startFailed bool) (states []State, d Decision) {
			var h History
			for range 100 {
				started := time.Now()
				time.Sleep(connectTimeout)
				e := Exit{Code: code(0), StartedAt: started, At: time.Now(), StartFailed: startFailed}
				if startFailed {
					e.StartedAt = time.Time{} // it never became ready
				}
				d = Decide(RestartAlways, h, e, time.Second, lim, nil)
				states = append(states, d.State)
				if !d.Restart {
					return states, d
				}
				h = d.History
				time.Sleep(d.Delay)
			}
			return states, d
		}

		before, d := run(false)
		if len(before) != 100 || d.State != StateRestarting || d.History.Degraded {
			t.Fatalf("as plain exits: %d runs, last %+v; the unit should never degrade (the bug)", len(before), d)
		}

		begin := time.Now()
		states, d := run(true)
		if d.State != StateFailed || !d.Latched {
			t.Fatalf("failed starts ended in %+v", d)
		}
		// 4 restarting, then degraded from the 5th failed start on for 10
		// attempts, and the 15th failed start gives up.
		if len(states) != 15 || states[3] != StateRestarting || states[4] != StateDegraded || states[13] != StateDegraded {
			t.Fatalf("states %v", states)
		}
		// 15 connect timeouts, 4 plain delays, backoff 2,4,...,256 s and
		// then the 5 min cap twice.
		want := 15*connectTimeout + 4*time.Second + (2+4+8+16+32+64+128+256+300+300)*time.Second
		if got := time.Since(begin); got != want {
			t.Fatalf("gave up after %s, want %s", got, want)
		}
	})
}

// TestLimitsWithDefaultsIsIdempotent: defaulting twice is defaulting once;
// in particular a disabled jitter (negative) stays disabled.
func TestLimitsWithDefaultsIsIdempotent(t *testing.T) {
	for _, l := range []Limits{{}, {Jitter: -1}, {Jitter: 0.5, MaxAttempts: 3}, {CrashThreshold: 2, StopGrace: time.Second}} {
		once := l.WithDefaults()
		if twice := once.WithDefaults(); twice != once {
			t.Errorf("%+v: once %+v, twice %+v", l, once, twice)
		}
	}
	lim := Limits{Jitter: -1}.WithDefaults().WithDefaults()
	for range 20 {
		if got := Backoff(time.Second, 2, lim, rand.Float64); got != 4*time.Second {
			t.Fatalf("a disabled jitter spread the delay: %s", got)
		}
	}
}
