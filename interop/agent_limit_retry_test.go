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
