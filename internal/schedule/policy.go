package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Action is what one firing of a job does (docs/design/runs.md).
type Action int

// The actions of Decide.
const (
	Run     Action = iota // the job is idle: start it
	Skip                  // record the firing as skipped
	Queue                 // run it once the active run ends
	Replace               // stop the active run and start a new one
)

func (a Action) String() string {
	switch a {
	case Run:
		return "run"
	case Skip:
		return "skip"
	case Queue:
		return "queue"
	case Replace:
		return "replace"
	}
	return "unknown"
}

// Values of on_overlap, as config spells them.
const (
	OverlapSkip    = "skip"
	OverlapQueue   = "queue"
	OverlapReplace = "replace"
)

// Decide is the on_overlap policy: what a firing does given whether the
// job is active and whether a firing already waits for it. At most one
// firing is queued: a second one while one waits is skipped, so a job
// slower than its period never piles up work. An unknown policy skips.
func Decide(onOverlap string, active, queued bool) Action {
	if !active {
		return Run
	}
	switch onOverlap {
	case OverlapQueue:
		if queued {
			return Skip
		}
		return Queue
	case OverlapReplace:
		return Replace
	}
	return Skip
}

// Missed counts the firings of sched that fell due after last and at or
// before now (the daemon was down, or the loop could not fire them), and
// returns the first of them. It stops counting at maxCatchUp. A zero last
// means nothing is known, so nothing was missed.
func Missed(sched cron.Schedule, last, now time.Time) (n int, first time.Time) {
	if last.IsZero() {
		return 0, time.Time{}
	}
	for t := sched.Next(last); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		if n == 0 {
			first = t
		}
		if n++; n >= maxCatchUp {
			break
		}
	}
	return n, first
}
