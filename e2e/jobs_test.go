//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

func TestCLI_ScheduledJobRunsWithCauseSchedule(t *testing.T) {
	f := newFleet(t, `
[harness.tick]
cmd = "sh"
args = ["-c", "echo tick"]
schedule = "@every 1s"
`)
	type run struct {
		Cause    string `json:"cause"`
		ExitCode *int   `json:"exit_code"`
	}
	var rs []run
	f.WaitFor("two scheduled runs", 20*time.Second, func() bool {
		f.MustJSON(&rs, "runs", "tick")
		ended := 0
		for _, r := range rs {
			if r.ExitCode != nil {
				ended++
			}
		}
		return ended >= 2
	})
	for _, r := range rs {
		if r.Cause != "schedule" {
			t.Fatalf("run cause %q, want schedule: %+v", r.Cause, rs)
		}
	}
	var jobs []struct {
		Name     string  `json:"name"`
		Schedule string  `json:"schedule"`
		NextFire *string `json:"next_fire"`
	}
	f.MustJSON(&jobs, "jobs")
	if len(jobs) != 1 || jobs[0].Schedule != "@every 1s" || jobs[0].NextFire == nil {
		t.Fatalf("jobs: %+v", jobs)
	}
	var trig []struct {
		Job   string `json:"job"`
		Fired int    `json:"fired"`
	}
	f.MustJSON(&trig, "triggers")
	if len(trig) != 1 || trig[0].Job != "tick" || trig[0].Fired < 2 {
		t.Fatalf("triggers: %+v", trig)
	}
	var u map[string]any
	f.MustJSON(&u, "describe", "tick")
	if u["schedule"] != "@every 1s" || u["next_fire"] == nil {
		t.Fatalf("describe shows no schedule/next fire: %v", u)
	}
}

func TestCLI_TriggerWaitFollowsExitStatus(t *testing.T) {
	f := newFleet(t, `
[harness.fails]
cmd = "sh"
args = ["-c", "echo working; echo 'giving up' >&2; exit 3"]
restart = "no"

[harness.long]
cmd = "sh"
args = ["-c", "echo long job; exec sleep 100000"]
restart = "no"
stop_grace = 1

[harness.service]
cmd = "sleep"
args = ["100000"]
`)
	out, _, code := f.Run("trigger", "fails", "--wait", "--timeout", "20s")
	if code != 3 {
		t.Fatalf("trigger --wait exit %d, want 3; out %s", code, out)
	}
	if !strings.Contains(out, "working") || !strings.Contains(out, "giving up") {
		t.Fatalf("trigger --wait should print the run's tail: %q", out)
	}

	f.MustRun("trigger", "long")
	f.waitState("long", "running")
	var res struct {
		Skipped   bool   `json:"skipped"`
		ActiveRun uint64 `json:"active_run"`
	}
	f.MustJSON(&res, "trigger", "long")
	if !res.Skipped || res.ActiveRun == 0 {
		t.Fatalf("triggering a running job: %+v", res)
	}
	out = f.MustRun("trigger", "long")
	if !strings.Contains(out, "skipped") {
		t.Fatalf("human output should say skipped: %q", out)
	}

	jout, _, jcode := f.Run("trigger", "service", "--json")
	if jcode == 0 || !strings.Contains(jout, `"not_a_job"`) {
		t.Fatalf("trigger of a non-job: exit %d %s", jcode, jout)
	}
}

func TestCLI_FiringDuringAGracefulStopNeverResurrectsTheJob(t *testing.T) {
	f := newFleet(t, `
[harness.stubborn]
cmd = "sh"
args = ["-c", "trap 'echo got TERM' TERM; while true; do sleep 0.1; done"]
schedule = "@every 1s"
stop_grace = 3
`)
	type trig struct {
		Fired   int `json:"fired"`
		Skipped int `json:"skipped"`
	}
	var tr []trig
	f.waitState("stubborn", "running") // the first firing started it
	f.WaitFor("a firing skipped while running", 10*time.Second, func() bool {
		f.MustJSON(&tr, "triggers")
		return tr[0].Skipped >= 1
	})
	var before []struct {
		ID uint64 `json:"id"`
	}
	f.MustJSON(&before, "runs", "stubborn")
	skippedBefore := tr[0].Skipped
	start := time.Now()
	f.MustRun("stop", "stubborn") // ignores SIGTERM: takes the whole grace
	stopEnd := time.Now()
	if d := time.Since(start); d < 2*time.Second {
		t.Fatalf("stop took %s; the job should have held out for its grace", d)
	}
	f.MustJSON(&tr, "triggers")
	if tr[0].Skipped < skippedBefore+2 {
		t.Fatalf("firings during the stop were not skipped: %+v (before %d)", tr[0], skippedBefore)
	}
	var after []struct {
		ID        uint64    `json:"id"`
		StartedAt time.Time `json:"started_at"`
		Outcome   string    `json:"outcome"`
	}
	f.MustJSON(&after, "runs", "stubborn")
	// The schedule goes on after the stop; only the stop's window counts.
	// A skipped firing is a record of its own (docs/design/runs.md), not a run.
	for _, r := range after[len(before):] {
		if r.Outcome != "skipped" && r.StartedAt.Before(stopEnd) {
			t.Fatalf("run %d started during the graceful stop (%s, stop ended %s)", r.ID, r.StartedAt, stopEnd)
		}
	}
}
