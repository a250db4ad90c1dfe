package web

// How the pages render times, durations, money, exits and holds.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// ago renders a time as "12s ago".
func ago(t any) string {
	var tm time.Time
	switch v := t.(type) {
	case time.Time:
		tm = v
	case *time.Time:
		if v == nil {
			return ""
		}
		tm = *v
	default:
		return ""
	}
	if tm.IsZero() {
		return ""
	}
	return roughDuration(time.Since(tm)) + " ago"
}

// until renders a future time as "in 3m".
func until(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	d := time.Until(*t)
	if d < 0 {
		return "due"
	}
	return "in " + roughDuration(d)
}

func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// hpath is the path of a harness's page: /h/NAME, the name escaped, so a
// project harness (project/name) is one path segment (harnessPath).
func hpath(name string) string { return "/h/" + url.PathEscape(name) }

// clock renders a turn's time as the CLI does (15:04:05, local).
func clock(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05")
}

// usd renders a cost as the CLI does; "-" when the model has no price.
func usd(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func exitText(r api.Run) string {
	switch {
	case r.EndedAt == nil:
		return "running"
	case r.Signal != "":
		return "signal " + r.Signal
	case r.ExitCode != nil:
		return "exit " + strconv.Itoa(*r.ExitCode)
	default:
		return "ended"
	}
}

// holdText renders a hold (docs/design/agents.md) whatever its shape: a reason
// string, or an object with a reason and an until.
func holdText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "false" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o map[string]any
	if json.Unmarshal(raw, &o) != nil {
		return "held"
	}
	parts := []string{}
	for _, k := range []string{"reason", "kind", "message"} {
		if v, ok := o[k].(string); ok && v != "" {
			parts = append(parts, v)
			break
		}
	}
	if v, ok := o["until"].(string); ok && v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			parts = append(parts, "until "+t.Local().Format("15:04"))
		}
	}
	if len(parts) == 0 {
		return "held"
	}
	return strings.Join(parts, " ")
}
