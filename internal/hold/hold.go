package hold

import (
	"fmt"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Limits are one harness's holds from its configuration.
type Limits struct {
	Hours         *Hours  // nil: any time
	MaxRunsPerDay int     // 0: no bound
	MaxCostPerDay float64 // USD; 0: no bound
	// Agent: the harness runs an agent, so max_concurrent_agents counts it.
	Agent bool
}

// Usage is what the harness and the fleet have used: runs started today
// (local day) and agents running now besides this one.
type Usage struct {
	RunsToday   int
	CostToday   float64 // USD, what today's runs reported
	OtherAgents int
	MaxAgents   int // [daemon] max_concurrent_agents; 0: no bound
	// LimitedUntil is when the usage limit the harness's last run was
	// parked on resets (with its jitter); LimitNote what the agent said.
	LimitedUntil time.Time
	LimitNote    string
}

// StartOfDay is local midnight of t's day.
func StartOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// Evaluate returns the hold on a start at now, nil when it may start.
// Hours come first (nothing else matters outside them), then a usage
// limit until its reset, then the day's run budget, then the fleet's
// agent count.
func Evaluate(now time.Time, l Limits, u Usage) *api.Hold {
	if l.Hours != nil && !l.Hours.Open(now) {
		until := l.Hours.Next(now)
		return &api.Hold{Reason: api.HoldHours, Until: &until, Note: "outside hours " + l.Hours.String()}
	}
	if u.LimitedUntil.After(now) {
		until := u.LimitedUntil
		return &api.Hold{Reason: api.HoldUsageLimit, Until: &until, Note: u.LimitNote}
	}
	if l.MaxRunsPerDay > 0 && u.RunsToday >= l.MaxRunsPerDay {
		until := StartOfDay(now).AddDate(0, 0, 1)
		return &api.Hold{Reason: api.HoldBudget, Until: &until,
			Note: fmt.Sprintf("max_runs_per_day %d reached", l.MaxRunsPerDay)}
	}
	if l.MaxCostPerDay > 0 && u.CostToday >= l.MaxCostPerDay {
		until := StartOfDay(now).AddDate(0, 0, 1)
		return &api.Hold{Reason: api.HoldBudget, Until: &until,
			Note: fmt.Sprintf("max_cost_per_day $%g reached ($%.4f spent today)", l.MaxCostPerDay, u.CostToday)}
	}
	if l.Agent && u.MaxAgents > 0 && u.OtherAgents >= u.MaxAgents {
		return &api.Hold{Reason: api.HoldBudget, Note: fmt.Sprintf("max_concurrent_agents %d running", u.MaxAgents)}
	}
	return nil
}

// NextChange is the next time after now at which Evaluate may answer
// differently for the clock alone: an hours boundary, or midnight for a
// day's budget. Zero when time alone changes nothing.
func NextChange(now time.Time, l Limits) time.Time {
	var next time.Time
	if l.Hours != nil {
		next = l.Hours.Next(now)
	}
	if l.MaxRunsPerDay > 0 || l.MaxCostPerDay > 0 {
		if mid := StartOfDay(now).AddDate(0, 0, 1); next.IsZero() || mid.Before(next) {
			next = mid
		}
	}
	return next
}

// Same reports whether two holds say the same (nil is no hold).
func Same(a, b *api.Hold) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Reason != b.Reason || a.Note != b.Note || (a.Until == nil) != (b.Until == nil) {
		return false
	}
	return a.Until == nil || a.Until.Equal(*b.Until)
}

// Message is the text of a `held` error for name.
func Message(name string, h *api.Hold) string {
	s := fmt.Sprintf("%s is held: %s", name, h.Reason)
	if h.Note != "" {
		s += " (" + h.Note + ")"
	}
	if h.Until != nil {
		s += " until " + h.Until.Format(time.RFC3339)
	}
	return s + "; start --force overrides once"
}
