//go:build interop

package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/hold"
)

// TestAgent_AUsageLimitTheAgentRetriesParksForTheDefaultWait: the real
// Claude Code, answered 429 "Usage limit reached for your plan" without
// being told not to retry, retries by itself and shows "429 Usage limit
// reached for your plan · retrying in 1s · attempt 1/10". That countdown
// is no reset (read as one, the harness was parked for seconds and
// started again into the same limit): the agent named none, so the park
// lasts the default wait, and nothing starts it meanwhile.
func TestAgent_AUsageLimitTheAgentRetriesParksForTheDefaultWait(t *testing.T) {
	rf := newRunFleet(t, claudeSpec, "mcp_wire = false")
	var turns []modelapi.Turn
	for range 12 { // its first try and its ten retries, and one more
		turns = append(turns, modelapi.Turn{Error: &modelapi.Error{Status: 429, Message: "Usage limit reached for your plan", Retried: true}})
	}
	rf.api.Script(turns...)
	if out, errOut, code := rf.Run("start", "a"); code != 0 {
		t.Fatalf("start: %s%s", out, errOut)
	}
	af := rf.agent()
	asked := time.Now()
	rf.askAndSee(af, "Start the work.")
	row := rf.waitRow("hold usage_limit", time.Minute, func(r api.UnitInfo) bool { return r.Hold != nil })
	h := row.Hold
	if h.Reason != api.HoldUsageLimit || h.Until == nil || h.Until.Before(asked.Add(hold.DefaultLimitWait)) ||
		h.Until.After(time.Now().Add(hold.DefaultLimitWait+time.Minute)) {
		t.Fatalf("hold %+v: want the default wait, %s from now", h, hold.DefaultLimitWait)
	}
	r := rf.lastRun()
	if r.Outcome != api.RunLimited || r.LimitUntil == nil || !r.LimitUntil.Equal(*h.Until) || !strings.Contains(r.Note, "retrying in") {
		t.Errorf("the limited run %+v", r)
	}
	if row.RestartCount != 0 || row.PID != 0 || !row.Enabled {
		t.Errorf("parked row %+v", row)
	}
}

// TestAgent_AJobRetryingAUsageLimitIsParkedBeforeItsTimeout: `claude -p`
// answered the same way retries for over three minutes (its api_retry
// events in stream-json) and ended at a shorter timeout as timed_out,
// with no hold. Now its retries, once their waits come to a minute, make
// the run limited and the harness parked for the default wait, well
// before its timeout. The server's 429 says retry-after 60 s, as a
// rate limit that clears in a minute does, so the first retry Claude Code
// announces waits that minute. (Claude Code's own backoff without a
// retry-after comes to a minute only at the seventh attempt, 35 s in:
// TestScenario_AJobRetryingAUsageLimitIsLimitedWithinMinutes reads such a
// run's captured output.)
func TestAgent_AJobRetryingAUsageLimitIsParkedBeforeItsTimeout(t *testing.T) {
	spec := claudeSpec
	spec.args = nil // a job is the adapter's print mode
	rf := newRunFleet(t, spec, "restart = \"no\"\nprompt = \"Summarise the logs.\"\ntimeout = 60\nmcp_wire = false")
	var turns []modelapi.Turn
	for range 12 {
		turns = append(turns, modelapi.Turn{Error: &modelapi.Error{Status: 429, Message: "Usage limit reached for your plan",
			Retried: true, RetryAfter: time.Minute}})
	}
	rf.api.Script(turns...)
	start := time.Now()
	tr, out := rf.trigger()
	r := rf.lastRun()
	if tr.Outcome != api.RunLimited || r.Outcome != api.RunLimited || r.LimitUntil == nil ||
		r.LimitUntil.Before(start.Add(hold.DefaultLimitWait)) || !strings.Contains(r.Note, "429") {
		t.Fatalf("after %s: trigger %+v %s\nrun %+v\nlog:\n%s", time.Since(start), tr, out, r, rf.Log())
	}
	t.Logf("limited after %s: %s", time.Since(start), r.Note)
	// The first retry trips it, a second or two after the start; the
	// timeout is 60 s.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("limited only after %s", d)
	}
	if n := len(rf.api.MainRequests()); n != 1 {
		t.Errorf("%d main requests: the job went on retrying after it was limited", n)
	}
	row := rf.unitRow()
	if row.Hold == nil || row.Hold.Reason != api.HoldUsageLimit || row.PID != 0 {
		t.Errorf("row %+v", row)
	}
}
