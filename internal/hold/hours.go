// Package hold decides whether a harness is held (docs/design/agents.md): outside its
// hours, past its budget of the day, or over the daemon's agent count. It
// is pure: every function takes the time it judges, so a fake clock
// (testing/synctest) or a plain time.Time drives it in tests.
package hold

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Hours is a parsed `hours` spec: the weekdays a window opens on and its
// times of day, in local time. A window whose end is before its start runs
// over midnight into the next day.
type Hours struct {
	spec     string
	days     [7]bool // by time.Weekday
	from, to int     // minutes after midnight
}

var (
	hoursRE = regexp.MustCompile(`^(?:([A-Za-z,\-]+)\s+)?([0-9]{1,2}):([0-9]{2})-([0-9]{1,2}):([0-9]{2})$`)
	dayIdx  = map[string]time.Weekday{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
)

// ParseHours parses "Mon-Fri 08:00-19:00", "Sat,Sun 10:00-14:00",
// "Mon-Fri 22:00-06:00" (over midnight) or "08:00-19:00" (every day).
func ParseHours(s string) (*Hours, error) {
	m := hoursRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, fmt.Errorf(`invalid hours %q (want e.g. "Mon-Fri 08:00-19:00")`, s)
	}
	h := &Hours{spec: s}
	if m[1] == "" {
		h.days = [7]bool{true, true, true, true, true, true, true}
	} else {
		for _, part := range strings.Split(m[1], ",") {
			a, b, isRange := strings.Cut(part, "-")
			da, ok1 := dayIdx[strings.ToLower(a)]
			db, ok2 := da, true
			if isRange {
				db, ok2 = dayIdx[strings.ToLower(b)]
			}
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("invalid hours %q: unknown day in %q (want Mon, Tue, Wed, Thu, Fri, Sat, Sun)", s, part)
			}
			for d := da; ; d = (d + 1) % 7 {
				h.days[d] = true
				if d == db {
					break
				}
			}
		}
	}
	clock := func(hh, mm string) (int, error) {
		hv, _ := strconv.Atoi(hh)
		mv, _ := strconv.Atoi(mm)
		if hv > 24 || mv > 59 || hv == 24 && mv != 0 {
			return 0, fmt.Errorf("invalid hours %q: %s:%s is not a time of day", s, hh, mm)
		}
		return hv*60 + mv, nil
	}
	var err error
	if h.from, err = clock(m[2], m[3]); err != nil {
		return nil, err
	}
	if h.to, err = clock(m[4], m[5]); err != nil {
		return nil, err
	}
	if h.from == h.to {
		return nil, fmt.Errorf("invalid hours %q: the window is empty", s)
	}
	return h, nil
}

// String is the spec as written.
func (h *Hours) String() string { return h.spec }

// Open reports whether t (in its own location; pass local time) is inside
// a window.
func (h *Hours) Open(t time.Time) bool {
	m := t.Hour()*60 + t.Minute()
	d := t.Weekday()
	if h.from < h.to {
		return h.days[d] && m >= h.from && m < h.to
	}
	return h.days[d] && m >= h.from || h.days[(d+6)%7] && m < h.to
}

// Next returns the first time after t at which Open changes: the window's
// end while open, its next start while closed.
func (h *Hours) Next(t time.Time) time.Time {
	open := h.Open(t)
	y, mo, d := t.Date()
	var best time.Time
	for k := 0; k <= 8; k++ {
		for _, at := range []int{h.from, h.to} {
			c := time.Date(y, mo, d+k, at/60, at%60, 0, 0, t.Location())
			if !c.After(t) || h.Open(c) == open {
				continue
			}
			if best.IsZero() || c.Before(best) {
				best = c
			}
		}
		if !best.IsZero() {
			return best
		}
	}
	return best
}
