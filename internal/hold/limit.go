package hold

import (
	"time"
)

// DefaultLimitWait is how long a harness is parked after a usage limit
// whose agent said no reset time (Gemini CLI says none).
const DefaultLimitWait = 15 * time.Minute

// The actions of on_limit (docs/design/agents.md).
const (
	LimitPark   = "park"
	LimitStop   = "stop"
	LimitIgnore = "ignore"
)

// LimitDecision is what to do about a run that reached its usage limit.
type LimitDecision struct {
	// Park: end the run and keep the harness held until Until, then
	// start it again. Stop: end the run and the harness. Neither: leave
	// the agent alone.
	Park, Stop bool
	Until      time.Time
}

// OnLimit decides for action (on_limit) on a usage limit that resets at
// reset (zero: unknown) seen at now. A park lasts until the reset plus
// jitter (rnd in [0,1): up to a twentieth of the wait, at least 1 s and
// at most a minute), so a fleet parked on one account does not come back
// in one instant; a reset that is not ahead (a clock time of minute
// precision, just passed) parks for the jitter alone.
func OnLimit(action string, reset, now time.Time, rnd float64) LimitDecision {
	switch action {
	case LimitIgnore:
		return LimitDecision{}
	case LimitStop:
		return LimitDecision{Stop: true}
	}
	if reset.IsZero() {
		reset = now.Add(DefaultLimitWait)
	}
	if reset.Before(now) {
		reset = now
	}
	jitter := min(max(reset.Sub(now)/20, time.Second), time.Minute)
	return LimitDecision{Park: true, Until: reset.Add(time.Duration(rnd * float64(jitter)))}
}
