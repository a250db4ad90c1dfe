package supervise

import (
	"fmt"
	"time"
)

// Policy is a unit's restart policy. The daemon converts config's
// RestartPolicy into it, so this package does not depend on config.
type Policy string

// The four restart policies (docs/design/lifecycle.md).
const (
	RestartAlways        Policy = "always"
	RestartUnlessStopped Policy = "unless-stopped"
	RestartOnFailure     Policy = "on-failure"
	RestartNo            Policy = "no"
)

// Defaults for the zero fields of Limits.
const (
	DefaultCrashThreshold = 5
	DefaultCrashWindow    = 60 * time.Second
	DefaultMaxDelay       = 5 * time.Minute
	DefaultMinBackoff     = 1 * time.Second
	DefaultJitter         = 0.2
	DefaultHealthyAfter   = 30 * time.Second
	DefaultMaxAttempts    = 10
	DefaultStopGrace      = 10 * time.Second
	DefaultWaitDelay      = 2 * time.Second
	DefaultOutputDrain    = 500 * time.Millisecond
)

// Limits holds every threshold of the restart policy and of process
// handling. A zero field takes its Default*; tests shrink them.
type Limits struct {
	// CrashThreshold exits inside CrashWindow make the unit degraded (5 in 60 s).
	CrashThreshold int
	CrashWindow    time.Duration
	// MaxDelay caps the exponential backoff while degraded (5 min).
	MaxDelay time.Duration
	// MinBackoff is the base of the backoff when restart_delay is smaller
	// (1 s), so restart_delay = 0 still backs off in a crash loop.
	MinBackoff time.Duration
	// Jitter is the relative spread of a degraded delay: 0.2 means ±20%.
	// Negative disables it.
	Jitter float64
	// HealthyAfter is how long a run must stay up to reset the crash
	// history (30 s).
	HealthyAfter time.Duration
	// MaxAttempts restarts while degraded before giving up into a latched
	// failed (10).
	MaxAttempts int
	// StopGrace is the default grace between SIGTERM and SIGKILL when the
	// unit sets none (10 s).
	StopGrace time.Duration
	// WaitDelay bounds how long cmd.Wait waits for I/O held open by a
	// grandchild after the main process exited (2 s).
	WaitDelay time.Duration
	// OutputDrain bounds how long the PTY output is drained after the main
	// process exited, before its exit is handled (500 ms).
	OutputDrain time.Duration
	// InputTimeout bounds one Input in all (InputTimeout, 5 s); tests
	// shorten it rather than wait.
	InputTimeout time.Duration
}

// WithDefaults returns l with every zero field set to its default. It is
// idempotent, so a layer that defaults limits it was given changes nothing.
func (l Limits) WithDefaults() Limits {
	if l.CrashThreshold <= 0 {
		l.CrashThreshold = DefaultCrashThreshold
	}
	if l.CrashWindow <= 0 {
		l.CrashWindow = DefaultCrashWindow
	}
	if l.MaxDelay <= 0 {
		l.MaxDelay = DefaultMaxDelay
	}
	if l.MinBackoff <= 0 {
		l.MinBackoff = DefaultMinBackoff
	}
	if l.Jitter == 0 {
		l.Jitter = DefaultJitter // a negative one stays: "none" must survive a second call
	}
	if l.HealthyAfter <= 0 {
		l.HealthyAfter = DefaultHealthyAfter
	}
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = DefaultMaxAttempts
	}
	if l.StopGrace <= 0 {
		l.StopGrace = DefaultStopGrace
	}
	if l.WaitDelay <= 0 {
		l.WaitDelay = DefaultWaitDelay
	}
	if l.OutputDrain <= 0 {
		l.OutputDrain = DefaultOutputDrain
	}
	if l.InputTimeout <= 0 {
		l.InputTimeout = InputTimeout
	}
	return l
}

// History is the crash-loop memory of a unit between explicit starts.
// Its zero value is a fresh unit.
type History struct {
	// Exits are the times of recent unexpected exits (and spawn failures),
	// oldest first, pruned to the crash window.
	Exits []time.Time
	// Degraded is set once the crash threshold was reached; it stays until
	// a healthy run or an explicit start resets the history.
	Degraded bool
	// Attempts counts restarts scheduled while degraded.
	Attempts int
	// FailedStarts counts consecutive failed starts (spawn failures and
	// runs that never became ready), however far apart: an upstream that
	// never completes initialize fails once per connect timeout, too slowly
	// for the crash window, and must still degrade and then fail.
	FailedStarts int
}

// Exit describes how a run ended, as the policy sees it.
type Exit struct {
	Code        *int   // exit status; nil when killed by a signal or never spawned
	Signal      string // "SIGKILL" etc. when killed by a signal
	SpawnFailed bool   // the process never started
	// StartFailed says the process ran but never became ready (an upstream
	// that did not complete initialize).
	StartFailed bool
	StartedAt   time.Time // when the run started, or became ready (zero: never)
	At          time.Time // when it ended
}

// Failed reports whether the exit counts as a failure: a non-zero code, a
// signal, a spawn that never happened or a start that never completed.
func (e Exit) Failed() bool {
	return e.SpawnFailed || e.StartFailed || e.Signal != "" || e.Code == nil || *e.Code != 0
}

// failedStart reports whether the exit is a failed start.
func (e Exit) failedStart() bool { return e.SpawnFailed || e.StartFailed }

// Decision is what the supervisor does after an exit while enabled.
type Decision struct {
	Restart bool          // schedule a restart after Delay
	Delay   time.Duration // restart delay (jittered when degraded)
	State   State         // next state: restarting, degraded, stopped or failed
	Latched bool          // failed by giving up: only an explicit start clears it
	// History to keep: updated on a restart, reset when the run was healthy.
	History History
	// BecameDegraded is set on the exit that crossed the crash threshold.
	BecameDegraded bool
	// Reason is a lifecycle text for the log ("degraded: 5 exits in 60s",
	// "failed: giving up after 10 attempts"), empty when nothing notable.
	Reason string
}

// ShouldRestart reports whether policy p restarts after exit e.
func ShouldRestart(p Policy, e Exit) bool {
	switch p {
	case RestartAlways, RestartUnlessStopped:
		return true
	case RestartOnFailure:
		return e.Failed()
	default:
		return false
	}
}

// Healthy reports whether a run started at startedAt counts as healthy at
// now, which resets the crash history.
func Healthy(startedAt, now time.Time, lim Limits) bool {
	lim = lim.WithDefaults()
	return !startedAt.IsZero() && now.Sub(startedAt) >= lim.HealthyAfter
}

// Decide applies policy p to an exit of an enabled unit. It is pure: the
// clock is e.At and randomness comes from rnd (a value in [0,1)).
//
// Without a restart the unit ends stopped after a clean exit and failed
// otherwise (not latched). With one, the exit is recorded; reaching the
// crash threshold inside the window, or as many failed starts in a row,
// makes the unit degraded, where the delay doubles per attempt from
// max(restartDelay, MinBackoff), capped at MaxDelay, with jitter; more than
// MaxAttempts degraded restarts give up into a latched failed.
func Decide(p Policy, h History, e Exit, restartDelay time.Duration, lim Limits, rnd func() float64) Decision {
	lim = lim.WithDefaults()
	if !e.failedStart() && Healthy(e.StartedAt, e.At, lim) {
		h = History{}
	}
	if e.failedStart() {
		h.FailedStarts++
	} else {
		h.FailedStarts = 0
	}
	if !ShouldRestart(p, e) {
		st := StateStopped
		if e.Failed() {
			st = StateFailed
		}
		return Decision{State: st, History: h}
	}

	h = recordExit(h, e.At, lim)
	d := Decision{Restart: true, State: StateRestarting, Delay: max(restartDelay, 0)}
	switch {
	case h.Degraded:
	case len(h.Exits) >= lim.CrashThreshold:
		h.Degraded = true
		d.BecameDegraded = true
		d.Reason = fmt.Sprintf("degraded: %d exits in %s", len(h.Exits), FormatDuration(lim.CrashWindow))
	case h.FailedStarts >= lim.CrashThreshold:
		h.Degraded = true
		d.BecameDegraded = true
		d.Reason = fmt.Sprintf("degraded: %d failed starts in a row", h.FailedStarts)
	}
	if h.Degraded {
		h.Attempts++
		if h.Attempts > lim.MaxAttempts {
			return Decision{State: StateFailed, Latched: true, History: h,
				Reason: fmt.Sprintf("failed: giving up after %d attempts", lim.MaxAttempts)}
		}
		d.State = StateDegraded
		d.Delay = Backoff(restartDelay, h.Attempts, lim, rnd)
	}
	d.History = h
	return d
}

// recordExit appends at to the history and drops exits older than the
// crash window.
func recordExit(h History, at time.Time, lim Limits) History {
	exits := make([]time.Time, 0, len(h.Exits)+1)
	for _, t := range h.Exits {
		if at.Sub(t) < lim.CrashWindow {
			exits = append(exits, t)
		}
	}
	h.Exits = append(exits, at)
	return h
}

// Backoff returns the delay before degraded restart number attempt (1 is
// the first): max(restartDelay, MinBackoff) doubled attempt times, capped at
// MaxDelay, spread by ±Jitter using rnd (nil means no jitter), and never
// above MaxDelay.
func Backoff(restartDelay time.Duration, attempt int, lim Limits, rnd func() float64) time.Duration {
	lim = lim.WithDefaults()
	d := max(restartDelay, lim.MinBackoff)
	for i := 0; i < attempt && d < lim.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, lim.MaxDelay)
	if rnd != nil && lim.Jitter > 0 {
		f := 1 + lim.Jitter*(2*rnd()-1)
		d = time.Duration(float64(d) * f)
	}
	return min(d, lim.MaxDelay)
}

// FormatDuration renders d for lifecycle texts: whole seconds as "60s",
// anything else rounded to the millisecond ("1.5s", "250ms").
func FormatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.Round(time.Millisecond).String()
}
