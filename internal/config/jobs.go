package config

import (
	"fmt"
	"time"

	"github.com/harness-dev/harness/internal/hold"
)

// Overlap says what a firing does while the job's previous run is still
// active (on_overlap, docs/design/runs.md).
type Overlap string

// The values of on_overlap.
const (
	OverlapSkip    Overlap = "skip"    // record the firing as skipped (the default)
	OverlapQueue   Overlap = "queue"   // run once the active run ends (at most one waits)
	OverlapReplace Overlap = "replace" // stop the active run, then run
)

// MaxKeepRuns bounds keep_runs.
const MaxKeepRuns = 100000

// JobControls are the keys of a job's runs (docs/design/runs.md): Timeout (0: none),
// OnOverlap, CatchUp (a firing missed while the daemon was down runs once
// at start) and KeepRuns (the run history bound of this harness; 0: the
// daemon's).
type JobControls struct {
	Timeout   time.Duration
	OnOverlap Overlap
	CatchUp   bool
	KeepRuns  int
}

// jobKey decodes one job-control key into j and reports whether k was one.
func (d *decoder) jobKey(k string, kp []string, val any, j *JobControls) bool {
	switch k {
	case "timeout":
		j.Timeout = d.seconds(kp, val, 0)
	case "on_overlap":
		if s, ok := d.str(kp, val); ok {
			switch o := Overlap(s); o {
			case OverlapSkip, OverlapQueue, OverlapReplace:
				j.OnOverlap = o
			default:
				d.add(kp, `invalid on_overlap %q (want "skip", "queue" or "replace")`, s)
			}
		}
	case "catch_up":
		j.CatchUp = d.boolean(kp, val)
	case "keep_runs":
		j.KeepRuns = d.count(kp, val, 1, MaxKeepRuns)
	default:
		return false
	}
	return true
}

// checkJob holds the job-control keys to jobs: a harness kept running has
// no firings to overlap and no end to time.
func (d *decoder) checkJob(path []string, t map[string]any, h *Harness) {
	if h.Job.OnOverlap == "" {
		h.Job.OnOverlap = OverlapSkip
	}
	if h.IsJob() {
		if _, ok := t["catch_up"]; ok && h.Schedule == "" {
			d.add(child(path, "catch_up"), "needs a schedule")
		}
		return
	}
	for _, k := range []string{"timeout", "on_overlap", "catch_up"} {
		if _, ok := t[k]; ok {
			d.add(child(path, k), "%s", fmt.Sprintf(`applies to jobs only (a schedule, or restart = "no" or "on-failure"), not restart = %q`, h.Restart))
		}
	}
}

// count decodes an integer in lo..hi (0 when it is not one).
func (d *decoder) count(kp []string, val any, lo, hi int64) int {
	n, ok := val.(int64)
	switch {
	case !ok:
		d.add(kp, "must be a whole number, not %s", tomlType(val))
	case n < lo || n > hi:
		d.add(kp, "%d is out of range (want %d..%d)", n, lo, hi)
	default:
		return int(n)
	}
	return 0
}

// HoldControls are the keys that hold a harness (docs/design/agents.md): Hours
// (hours, local time; nil: any time) and MaxRunsPerDay (0: no bound).
type HoldControls struct {
	Hours         *hold.Hours
	MaxRunsPerDay int
	// MaxCostPerDay (max_cost_per_day, USD; 0: no bound) bounds what the
	// runs since local midnight cost, as their agents report it.
	MaxCostPerDay float64
}

// holdKey decodes one hold key into h and reports whether k was one.
func (d *decoder) holdKey(k string, kp []string, val any, h *HoldControls) bool {
	switch k {
	case "hours":
		if s, ok := d.str(kp, val); ok {
			hs, err := hold.ParseHours(s)
			if err != nil {
				d.add(kp, "%v", err)
			}
			h.Hours = hs
		}
	case "max_runs_per_day":
		h.MaxRunsPerDay = d.count(kp, val, 1, 1000000)
	case "max_cost_per_day":
		switch n := val.(type) {
		case float64:
			h.MaxCostPerDay = n
		case int64:
			h.MaxCostPerDay = float64(n)
		default:
			d.add(kp, "must be a number of US dollars, not %s", tomlType(val))
			return true
		}
		if !(h.MaxCostPerDay > 0) || h.MaxCostPerDay > 1e6 {
			d.add(kp, "%v is out of range (want more than 0, at most 1000000 US dollars)", val)
			h.MaxCostPerDay = 0
		}
	default:
		return false
	}
	return true
}
