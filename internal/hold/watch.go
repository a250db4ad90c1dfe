package hold

import (
	"context"
	"time"
)

// MaxSleep bounds how long Watch sleeps between evaluations, so a clock
// that jumps (suspend, NTP) is caught up within it.
const MaxSleep = time.Minute

// Watch calls tick now, then again at the time it returns (zero: only on
// wake), at least every MaxSleep, and whenever wake fires, until ctx ends.
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
		case <-timer.C:
		}
		timer.Stop()
	}
}
