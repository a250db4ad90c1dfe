package hold

import (
	"context"
	"time"
)

// MaxSleep bounds how long Watch sleeps between evaluations, so a clock
// that jumps (suspend, NTP) is caught up within it.
const MaxSleep = time.Minute

// WakeGap is the least time from one evaluation to the next that wake
// asks for. `stop --all` of 1,000 harnesses ends 1,000 runs, each waking
// the watcher, and each evaluation looks at the whole fleet: back to back,
// they took a seventh of the daemon's CPU for the stop. Wakes within the
// gap are served by the one evaluation at its end.
const WakeGap = 100 * time.Millisecond

// Watch calls tick now, then again at the time it returns (zero: only on
// wake), at least every MaxSleep, and whenever wake fires (but not within
// WakeGap of the last call), until ctx ends.
// It runs on time.Now and timers alone, so testing/synctest drives it.
func Watch(ctx context.Context, wake <-chan struct{}, tick func(now time.Time) (next time.Time)) {
	timer := time.NewTimer(MaxSleep)
	defer timer.Stop()
	for {
		now := time.Now()
		next := tick(now)
		d := MaxSleep
		if !next.IsZero() {
			d = min(max(next.Sub(now), 0), MaxSleep)
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if rest := WakeGap - time.Since(now); rest > 0 {
				timer.Reset(rest)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
				select {
				case <-wake: // served by the evaluation that follows
				default:
				}
			}
		case <-timer.C:
		}
		timer.Stop()
	}
}
