package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// jsonValues decodes every JSON object in out, in order: one per line
// (JSONL, Claude Code's stream-json and Codex's --json) or one spread
// over lines (Gemini CLI's json). Whatever is not JSON (a warning on
// stderr, a PTY's carriage returns) is skipped.
func jsonValues(out []byte) []map[string]any {
	out = bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))
	var vals []map[string]any
	for len(out) > 0 {
		i := bytes.Index(out, []byte("\n{"))
		switch {
		case bytes.HasPrefix(out, []byte("{")):
			i = 0
		case i < 0:
			return vals
		default:
			i++
		}
		out = out[i:]
		dec := json.NewDecoder(bytes.NewReader(out))
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			out = out[1:] // not JSON from here: look for the next object
			continue
		}
		vals = append(vals, m)
		out = out[dec.InputOffset():]
	}
	return vals
}

// str, num and obj read a decoded JSON value's fields without panicking.
func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

func obj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

// isUsageLimit reports whether an error text is a usage (quota) limit
// rather than another API error.
func isUsageLimit(text string) bool {
	t := strings.ToLower(text)
	for _, p := range []string{"usage limit", "limit reached", "hit your limit", "hit your usage limit", "exhausted your", "quota", "rate limit"} {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

// usageLimit is the adapters' UsageLimit: a usage-limit message and the
// reset time it names (ParseReset), zero when it names none.
func usageLimit(text string, now time.Time) (time.Time, bool) {
	if !isUsageLimit(text) {
		return time.Time{}, false
	}
	until, _ := ParseReset(text, now)
	return until, true
}

// toolCall is a tool call as the loop guard compares it: the name and the
// input as compact JSON (encoding/json sorts map keys), clipped.
func toolCall(name string, input any) string {
	if name == "" {
		return ""
	}
	b, err := json.Marshal(input)
	if err != nil || input == nil {
		return name
	}
	s := name + " " + string(b)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Retry is one retry an agent makes by itself of a model API request
// that failed, as a job's output says while the job runs.
type Retry struct {
	// Status is the HTTP status that failed: 429 for a rate or usage
	// limit.
	Status int
	// Attempt counts from 1 for each request; Max is the agent's bound.
	Attempt, Max int
	// Delay is the wait before this attempt.
	Delay time.Duration
}

// LimitRetryWait is how long an agent may go on retrying 429s of one
// request by itself before its run counts as limited: a per-minute rate
// limit clears within a minute; a usage limit lasts hours, and retrying
// it only ends the job at its timeout.
const LimitRetryWait = time.Minute

// RetryWatch follows an agent's retries in one run. The zero value is
// ready.
type RetryWatch struct {
	waited  time.Duration
	tripped bool
}

// Limited adds r and reports, once, when the run is limited: the waits
// of one request's 429 retries, the one r announces included, come to
// LimitRetryWait, or its last attempt is announced. Another status, or a new request's first
// attempt, starts the count again.
func (w *RetryWatch) Limited(r Retry) bool {
	if r.Status != 429 || r.Attempt <= 1 {
		w.waited = 0
	}
	if r.Status != 429 || w.tripped {
		return false
	}
	w.waited += r.Delay
	if w.waited >= LimitRetryWait || r.Max > 0 && r.Attempt >= r.Max {
		w.tripped = true
	}
	return w.tripped
}
