package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/api"
)

func runsCmd(g *globals) *cobra.Command {
	var limit int
	return listVerb(g, listing[api.Run]{
		use: "runs [NAME]", short: "Show run history", op: api.OpRuns,
		args: cobra.MaximumNArgs(1),
		request: func(cmd *cobra.Command, args []string) (any, error) {
			a := api.RunsArgs{Limit: limit}
			if len(args) == 1 {
				a.Name = g.unitName(cmd, args[0])
			}
			return a, nil
		},
		header: "ID\tHARNESS\tCAUSE\tPID\tSTARTED\tENDED\tEXIT\tSIGNAL\tOUTCOME\tNOTE",
		row: func(r api.Run) []string {
			return []string{fmt.Sprint(r.ID), r.Harness, string(r.Cause), pidStr(r.PID), when(&r.StartedAt), when(r.EndedAt), intPtr(r.ExitCode), r.Signal, orDash(string(r.Outcome)), r.Note}
		},
	}, func(cmd *cobra.Command) {
		cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (newest)")
	})
}

func jobsCmd(g *globals) *cobra.Command {
	return listVerb(g, listing[api.JobInfo]{
		use: "jobs", short: "List jobs: schedule, next fire, last run", op: api.OpJobs,
		header: "NAME\tSTATE\tSCHEDULE\tNEXT\tLAST RUN\tEXIT",
		row: func(j api.JobInfo) []string {
			last, code := "-", "-"
			if j.LastRun != nil {
				last, code = fmt.Sprint(j.LastRun.ID), intPtr(j.LastRun.ExitCode)
			}
			return []string{j.Name, j.State, orDash(j.Schedule), when(j.NextFire), last, code}
		},
	}, nil)
}

func triggersCmd(g *globals) *cobra.Command {
	return listVerb(g, listing[api.Trigger]{
		use: "triggers", short: "List armed schedule triggers", op: api.OpTriggers,
		header: "JOB\tKIND\tSPEC\tNEXT\tLAST FIRED\tFIRED\tSKIPPED",
		row: func(t api.Trigger) []string {
			next := t.NextFire
			return []string{t.Job, t.Kind, t.Spec, when(&next), when(t.LastFired), fmt.Sprint(t.Fired), fmt.Sprint(t.Skipped)}
		},
	}, nil)
}

func triggerCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Start a job now; with --wait, follow it and exit with its outcome",
		Long: `Start a job now, through its on_overlap policy (skip, queue or replace).

With --wait, follow the run to its end; the exit status says its outcome:
  0     ok
  N     failed: the run's own exit code (128+n when signal n ended it; 1 when unknown)
  124   timed_out (the job's timeout ended it), or --timeout gave up waiting
  130   interrupted (stopped, restarted, replaced, or the daemon went away)
  65    loop (the loop guard ended it)
  75    it did not run now: skipped, queued, held or limited
Without --wait the status is 0 once the firing is decided.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.TriggerArgs{Name: g.unitName(cmd, args[0]), Wait: wait, TimeoutS: timeout.Seconds()}
			var res api.TriggerResult
			if err := g.call(cmd.Context(), api.OpTrigger, a, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if g.json {
				if err := emit(w, res); err != nil {
					return err
				}
			} else {
				switch {
				case res.Skipped:
					fmt.Fprintf(w, "%s: skipped, run %d is active\n", res.Name, res.ActiveRun)
				case res.Queued:
					fmt.Fprintf(w, "%s: queued, runs once run %d ends\n", res.Name, res.ActiveRun)
				case !res.Waited:
					fmt.Fprintf(w, "%s: started run %d\n", res.Name, res.RunID)
				default:
					for _, e := range res.Tail {
						fmt.Fprintln(w, e.Text)
					}
					if res.TimedOut {
						fmt.Fprintf(w, "%s: run %d still running after %s\n", res.Name, res.RunID, timeout)
					} else {
						fmt.Fprintf(w, "%s: run %d %s: exited %s%s after %dms%s\n", res.Name, res.RunID, orDash(string(res.Outcome)),
							intPtr(res.ExitCode), sigSuffix(res.Signal), res.DurationMS, noteSuffix(res.Note))
					}
				}
			}
			if !wait {
				return nil
			}
			if code := triggerStatus(res); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the run to its end and exit with its status")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (default 10m)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpTrigger)
}

// signalNumber maps "SIGTERM" to 15, as a shell reports a job a signal
// ended (exit status 128+n); an unknown name counts as SIGKILL.
func signalNumber(name string) int {
	if n := unix.SignalNum(name); n != 0 {
		return int(n)
	}
	return int(unix.SIGKILL)
}

// triggerStatus is the exit status of `trigger --wait` for its answer (the
// table in the verb's help).
func triggerStatus(res api.TriggerResult) int {
	switch {
	case res.Skipped || res.Queued:
		return 75
	case res.TimedOut:
		return 124
	}
	switch res.Outcome {
	case api.RunOK:
		return 0
	case api.RunTimedOut:
		return 124
	case api.RunInterrupted:
		return 130
	case api.RunLoop:
		return 65
	case api.RunHeld, api.RunLimited, api.RunSkipped:
		return 75
	}
	switch {
	case res.ExitCode != nil:
		if *res.ExitCode != 0 {
			return *res.ExitCode
		}
		return 1 // failed with exit 0 cannot happen; never report success for it
	case res.Signal != "":
		return 128 + signalNumber(res.Signal)
	}
	return 1
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (" + note + ")"
}
