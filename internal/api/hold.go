package api

import "time"

// Hold says why a harness is not started, not restarted and not counted
// as failing (docs/design/agents.md); Until is when it lifts, when that is known.
type Hold struct {
	Reason HoldReason `json:"reason"`
	Until  *time.Time `json:"until,omitempty"`
	// Note says more: the window, the budget reached.
	Note string `json:"note,omitempty"`
}

// HoldReason is why a harness is held.
type HoldReason string

// The reasons a harness is held.
const (
	HoldUsageLimit HoldReason = "usage_limit"
	HoldBudget     HoldReason = "budget"
	HoldHours      HoldReason = "hours"
)

// EventHold: a harness's hold was set, changed or lifted (Hold nil).
const EventHold = "hold"
