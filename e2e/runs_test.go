//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runRec is the shape of `runs --json`, outcome and agent fields included.
type runRec struct {
	ID       uint64     `json:"id"`
	Harness  string     `json:"harness"`
	Cause    string     `json:"cause"`
	PID      int        `json:"pid"`
	EndedAt  *time.Time `json:"ended_at"`
	ExitCode *int       `json:"exit_code"`
	Outcome  string     `json:"outcome"`
	Note     string     `json:"note"`
}

func (f *fleet) runsOf(name string) []runRec {
	f.T.Helper()
	var rs []runRec
	f.MustJSON(&rs, "runs", name)
	return rs
}

// TestScenario_JobControlsEndToEnd: a job's timeout ends its run as
// timed_out with nothing left running and trigger --wait exiting 124;
// on_overlap queue and replace; logs --run reads one run.
func TestScenario_JobControlsEndToEnd(t *testing.T) {
	f := newFleet(t, `
[harness.hang]
cmd = "sh"
args = ["-c", "echo hanging; exec sleep 100000"]
restart = "no"
timeout = 1

[harness.queued]
cmd = "sh"
args = ["-c", "echo run of queued; sleep 1"]
restart = "no"
on_overlap = "queue"

[harness.replaced]
cmd = "sh"
args = ["-c", "echo run of replaced; exec sleep 100000"]
restart = "no"
on_overlap = "replace"
stop_grace = 2
`)
	out, errOut, code := f.Run("trigger", "hang", "--wait", "--timeout", "30s")
	if code != 124 || !strings.Contains(out, "timed_out") {
		t.Fatalf("trigger --wait of a job past its timeout: exit %d, want 124\n%s%s", code, out, errOut)
	}
	rs := f.runsOf("hang")
	if len(rs) != 1 || rs[0].Outcome != "timed_out" || rs[0].Note != "timed out after 1s" || rs[0].PID == 0 {
		t.Fatalf("runs: %+v", rs)
	}
	waitGone(t, "the timed-out run's process", rs[0].PID)
	if st := f.unit("hang").State; st != "stopped" {
		t.Fatalf("hang is %s after its timeout, want stopped", st)
	}

	var first, second struct {
		RunID     uint64 `json:"run_id"`
		Queued    bool   `json:"queued"`
		ActiveRun uint64 `json:"active_run"`
	}
	f.MustJSON(&first, "trigger", "queued")
	f.MustJSON(&second, "trigger", "queued")
	if first.RunID == 0 || !second.Queued || second.ActiveRun != first.RunID {
		t.Fatalf("queue: first %+v second %+v", first, second)
	}
	if _, _, code := f.Run("trigger", "queued", "--wait"); code == 0 {
		t.Fatal("a third trigger while one waits should not run (exit 75)")
	}
	f.WaitFor("the queued firing to run and end", 20*time.Second, func() bool {
		rs := f.runsOf("queued")
		ok := 0
		for _, r := range rs {
			if r.Outcome == "ok" {
				ok++
			}
		}
		return ok == 2 && f.unit("queued").State == "stopped"
	})
	rs = f.runsOf("queued")
	if len(rs) != 3 || rs[2].Outcome != "skipped" && rs[1].Outcome != "skipped" {
		t.Fatalf("queued runs: %+v", rs)
	}

	var r1, r2 struct {
		RunID    uint64 `json:"run_id"`
		Replaced uint64 `json:"replaced"`
	}
	f.MustJSON(&r1, "trigger", "replaced")
	f.waitState("replaced", "running")
	f.MustJSON(&r2, "trigger", "replaced")
	if r2.Replaced != r1.RunID || r2.RunID <= r1.RunID {
		t.Fatalf("replace: %+v then %+v", r1, r2)
	}
	rs = f.runsOf("replaced")
	if len(rs) != 2 || rs[0].Outcome != "interrupted" || rs[1].EndedAt != nil {
		t.Fatalf("replaced runs: %+v", rs)
	}
	// logs --run: only the first run's entries.
	var logs struct {
		Entries []struct {
			RunID uint64 `json:"run_id"`
			Text  string `json:"text"`
		} `json:"entries"`
	}
	f.MustJSON(&logs, "logs", "replaced", "--run", fmt.Sprint(r1.RunID))
	if len(logs.Entries) == 0 {
		t.Fatal("logs --run: no entries")
	}
	sawOutput := false
	for _, e := range logs.Entries {
		if e.RunID != r1.RunID {
			t.Fatalf("logs --run %d shows an entry of run %d: %q", r1.RunID, e.RunID, e.Text)
		}
		sawOutput = sawOutput || strings.Contains(e.Text, "run of replaced")
	}
	if !sawOutput {
		t.Fatalf("logs --run lacks the run's output: %+v", logs.Entries)
	}
	if _, _, code := f.Run("logs", "replaced", "--run", "99999"); code == 0 {
		t.Fatal("logs --run of an unknown run should fail")
	}
	f.MustRun("stop", "replaced")
}

// TestScenario_CatchUpAfterTheDaemonWasDown: a schedule that fell due
// while the daemon was down runs once at start with catch_up, and is a
// `missed` record without it.
func TestScenario_CatchUpAfterTheDaemonWasDown(t *testing.T) {
	f := newFleet(t, `
[harness.nightly]
cmd = "sh"
args = ["-c", "echo caught up"]
schedule = "@every 1h"
catch_up = true

[harness.plain]
cmd = "sh"
args = ["-c", "echo never"]
schedule = "@every 1h"
`)
	f.Stop()
	// The last firings on record were 2.5 hours ago: two fell due since.
	past := time.Now().Add(-150 * time.Minute).UTC()
	fh, err := os.OpenFile(filepath.Join(f.State, "runs.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"nightly", "plain"} {
		line, _ := json.Marshal(map[string]any{"id": 1000 + i, "harness": name, "cause": "schedule", "pid": 0,
			"started_at": past, "ended_at": past, "exit_code": 0, "signal": "", "outcome": "ok"})
		fh.Write(append(line, '\n'))
	}
	fh.Close()
	f.start()
	f.WaitFor("the catch-up run", 20*time.Second, func() bool {
		rs := f.runsOf("nightly")
		return len(rs) == 2 && rs[1].Outcome == "ok" && rs[1].Cause == "schedule"
	})
	rs := f.runsOf("plain")
	if len(rs) != 2 || rs[1].Outcome != "missed" || !strings.HasPrefix(rs[1].Note, "2 firing(s) due while the daemon was down") {
		t.Fatalf("plain: %+v", rs)
	}
}

// heldError is the --json failure of a start a hold refused.
type heldError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (f *fleet) mustBeHeld(reason string, args ...string) heldError {
	f.T.Helper()
	out, _, code := f.Run(append(args, "--json")...)
	var e heldError
	if code == 0 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Code != "held" || !strings.Contains(e.Error.Message, reason) {
		f.T.Fatalf("harness %v: exit %d, want a held (%s) error: %s", args, code, reason, out)
	}
	return e
}

// TestScenario_BudgetHoursAndAgentCountHold: the N+1th run of the day is
// refused with held (a `held` run record for a firing), also after a
// daemon restart; start --force passes once; a harness outside its hours
// is held at boot and shows it; max_concurrent_agents holds the second
// agent.
func TestScenario_BudgetHoursAndAgentCountHold(t *testing.T) {
	now := time.Now()
	from := now.Add(2 * time.Hour)
	to := now.Add(3 * time.Hour)
	hours := fmt.Sprintf("%02d:%02d-%02d:%02d", from.Hour(), from.Minute(), to.Hour(), to.Minute())
	f := newFleet(t, fmt.Sprintf(`
[daemon]
max_concurrent_agents = 1

[harness.budgeted]
cmd = "true"
restart = "no"
max_runs_per_day = 2

[harness.office]
cmd = "sleep"
args = ["100000"]
enabled = true
hours = %q

# sleep stands in for Codex: without its MCP wiring and hooks (-c args)
[harness.agent1]
cmd = "sleep"
args = ["100000"]
agent = "codex"
mcp_wire = false
hooks = false

[harness.agent2]
cmd = "sleep"
args = ["100000"]
agent = "codex"
mcp_wire = false
hooks = false
`, hours))
	f.MustRun("trigger", "budgeted", "--wait")
	f.MustRun("trigger", "budgeted", "--wait")
	e := f.mustBeHeld("max_runs_per_day 2 reached", "trigger", "budgeted")
	if !strings.Contains(e.Error.Message, "until") {
		t.Fatalf("the message should say until when: %s", e.Error.Message)
	}
	rs := f.runsOf("budgeted")
	if len(rs) != 3 || rs[2].Outcome != "held" {
		t.Fatalf("the refused firing is a held record: %+v", rs)
	}
	var row struct {
		Hold *struct {
			Reason string     `json:"reason"`
			Until  *time.Time `json:"until"`
		} `json:"hold"`
	}
	f.MustJSON(&row, "describe", "budgeted")
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.Local)
	if row.Hold == nil || row.Hold.Reason != "budget" || row.Hold.Until == nil || !row.Hold.Until.Equal(midnight) {
		t.Fatalf("describe hold: %+v", row.Hold)
	}
	// Outside its hours: held at boot, shown, refused, forced once.
	if st := f.unit("office"); st.State != "stopped" {
		t.Fatalf("office autostarted outside its hours: %+v", st)
	}
	f.MustJSON(&row, "describe", "office")
	if row.Hold == nil || row.Hold.Reason != "hours" || row.Hold.Until == nil || row.Hold.Until.Sub(from) > time.Minute || from.Sub(*row.Hold.Until) > time.Minute {
		t.Fatalf("office hold: %+v (window opens %s)", row.Hold, from)
	}
	if out := f.MustRun("list"); !strings.Contains(out, "(held: hours)") {
		t.Fatalf("list does not show the hold:\n%s", out)
	}
	f.mustBeHeld("outside hours", "start", "office")
	f.MustRun("start", "office", "--force")
	f.waitState("office", "running")
	// Holds are kept by what they are made of: the day's runs survive a
	// daemon restart, and so does the budget hold.
	f.Stop()
	f.start()
	f.mustBeHeld("max_runs_per_day 2 reached", "trigger", "budgeted")
	f.MustRun("start", "budgeted", "--force")
	// Agents: one may run at a time.
	f.MustRun("start", "agent1")
	f.waitState("agent1", "running")
	f.mustBeHeld("max_concurrent_agents 1", "start", "agent2")
	f.MustRun("stop", "agent1")
	f.MustRun("start", "agent2")
	f.waitState("agent2", "running")
	f.MustRun("stop", "--all")
}
