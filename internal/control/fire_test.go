package control

import (
	"testing"

	"github.com/harness-dev/harness/internal/supervise"
)

// TestFiringRules pins which states a scheduled firing skips (the job is
// active, including while it stops gracefully) and which it fires from
// (stopped, failed, restarting fire; starting, running, degraded,
// stopping skip). fire() and trigger both decide with isActive.
func TestFiringRules(t *testing.T) {
	for state, skip := range map[supervise.State]bool{
		supervise.StateStarting:   true,
		supervise.StateRunning:    true,
		supervise.StateDegraded:   true,
		supervise.StateStopping:   true,
		supervise.StateStopped:    false,
		supervise.StateFailed:     false,
		supervise.StateRestarting: false,
	} {
		if got := isActive(state); got != skip {
			t.Errorf("state %s: skip=%v, want %v", state, got, skip)
		}
	}
}
