package agent

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// resetREs are ParseReset's patterns, compiled at its first call: at
// package init they cost every harness process (the CLI's too) about a
// millisecond.
var resetREs = sync.OnceValue(func() (r struct{ clock, dur, unit, date, iso *regexp.Regexp }) {
	// "resets 3pm", "resets at 11:36 PM", "try again at 3:05 PM",
	// "reset at 15:05".
	r.clock = regexp.MustCompile(`(?i)\b(?:resets?|try again|available|retry)\b[^0-9\n]{0,12}?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:[^0-9a-z]|$)`)
	// "in 2 hours 5 minutes", "in 3h 10m", "after 45s", "in 1 day".
	r.dur = regexp.MustCompile(`(?i)\b(?:in|after)\s+((?:\d+\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	r.unit = regexp.MustCompile(`(?i)(\d+)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	// "Dec 2nd, 2026 12:06 AM" (Codex).
	r.date = regexp.MustCompile(`(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+(\d{1,2}):(\d{2})\s*([ap]m)?`)
	r.iso = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?`)
	return r
})

// ParseReset reads when a limit resets from a message an agent shows: an
// ISO time, a duration ("in 2 hours 5 minutes", "in 3h"), or a clock time
// after "resets" / "try again at" ("resets 3pm", "try again at 3:05 PM"),
// which is the next such time after now, in now's location. ok is false
// when text says none of these.
func ParseReset(text string, now time.Time) (time.Time, bool) {
	re := resetREs()
	if m := re.iso.FindString(text); m != "" {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
			if t, err := time.ParseInLocation(layout, m, now.Location()); err == nil {
				return t, true
			}
		}
	}
	if m := re.date.FindStringSubmatch(text); m != nil {
		mon := strings.Index("janfebmaraprmayjunjulaugsepoctnovdec", strings.ToLower(m[1])) / 3
		day, _ := strconv.Atoi(m[2])
		year, _ := strconv.Atoi(m[3])
		h, _ := strconv.Atoi(m[4])
		mins, _ := strconv.Atoi(m[5])
		if h, ok := hour24(h, strings.ToLower(m[6])); ok && mins < 60 {
			return time.Date(year, time.Month(mon+1), day, h, mins, 0, 0, now.Location()), true
		}
	}
	if m := resetDuration(re.dur, text); m != "" {
		var d time.Duration
		for _, u := range re.unit.FindAllStringSubmatch(m, -1) {
			n, _ := strconv.Atoi(u[1])
			switch unit := strings.ToLower(u[2]); {
			case strings.HasPrefix(unit, "d"):
				d += time.Duration(n) * 24 * time.Hour
			case strings.HasPrefix(unit, "h"):
				d += time.Duration(n) * time.Hour
			case strings.HasPrefix(unit, "m"):
				d += time.Duration(n) * time.Minute
			default:
				d += time.Duration(n) * time.Second
			}
		}
		if d > 0 {
			return now.Add(d).Truncate(time.Second), true
		}
	}
	if m := re.clock.FindStringSubmatch(text); m != nil {
		h, _ := strconv.Atoi(m[1])
		mins := 0
		if m[2] != "" {
			mins, _ = strconv.Atoi(m[2])
		}
		ampm := strings.ToLower(strings.ReplaceAll(m[3], ".", ""))
		if ampm == "" && m[2] == "" {
			return time.Time{}, false // a bare number is no time
		}
		h, ok := hour24(h, ampm)
		if !ok || mins > 59 {
			return time.Time{}, false
		}
		t := time.Date(now.Year(), now.Month(), now.Day(), h, mins, 0, 0, now.Location())
		switch {
		case !t.Before(now.Add(-time.Minute)) && !t.After(now):
			// "resets 11:13pm" read at 23:13:30: the reset is within this
			// minute, not tomorrow.
			t = t.Add(time.Minute)
		case !t.After(now):
			t = t.AddDate(0, 0, 1)
		}
		return t, true
	}
	return time.Time{}, false
}

// resetDuration is the first duration in text that is not the agent's
// own retry countdown ("retrying in 3s · attempt 3/10": Claude Code
// retrying a 429 by itself): that says when it asks again, not when the
// limit resets.
func resetDuration(dur *regexp.Regexp, text string) string {
	for _, m := range dur.FindAllStringSubmatchIndex(text, -1) {
		before := strings.ToLower(strings.TrimRight(text[:m[0]], " \t"))
		if strings.HasSuffix(before, "retrying") {
			continue
		}
		return text[m[2]:m[3]]
	}
	return ""
}

// hour24 turns an hour and "am"/"pm"/"" into 0..23.
func hour24(h int, ampm string) (int, bool) {
	switch {
	case ampm == "pm" && h < 12:
		h += 12
	case ampm == "am" && h == 12:
		h = 0
	}
	return h, h <= 23
}
