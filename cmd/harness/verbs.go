package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/runs"
	"github.com/harness-dev/harness/internal/schedule"
)

func table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func intPtr(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func pidStr(pid int) string {
	if pid == 0 {
		return "-"
	}
	return fmt.Sprint(pid)
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func listCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List harnesses and their state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listUnits(cmd, g, struct{}{})
		},
	}
	addJSON(cmd, g)
	return cmd
}

// listUnits runs the list op with args (list and ps) and prints its answer.
// With --json the daemon's JSON is indented as it came: decoding it into
// []control.UnitInfo and encoding it again prints the same bytes (the
// daemon encodes those very structs) but costs most of this process's CPU
// on a large fleet.
func listUnits(cmd *cobra.Command, g *globals, args any) error {
	if g.json {
		var raw json.RawMessage
		if err := g.call(cmd.Context(), "list", args, &raw); err != nil {
			return err
		}
		return emitRaw(cmd.OutOrStdout(), raw)
	}
	var res []control.UnitInfo
	if err := g.call(cmd.Context(), "list", args, &res); err != nil {
		return err
	}
	var rows [][]string
	for _, u := range res {
		rows = append(rows, []string{u.Name, u.State, fmt.Sprint(u.Enabled), pidStr(u.PID), fmt.Sprint(u.RestartCount), intPtr(u.LastExitCode), u.Schedule, u.Description})
	}
	table(cmd.OutOrStdout(), "NAME\tSTATE\tENABLED\tPID\tRESTARTS\tEXIT\tSCHEDULE\tDESCRIPTION", rows)
	return nil
}

func describeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show one harness: state, config, current run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d control.Description
			if err := g.call(cmd.Context(), "describe", control.NameArg{Name: args[0]}, &d); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), d)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "name:           %s\nstate:          %s\nenabled:        %v\npid:            %s\nrestarts:       %d\nlast exit:      %s\n",
				d.Name, d.State, d.Enabled, pidStr(d.PID), d.RestartCount, intPtr(d.LastExitCode))
			if d.Description != "" {
				fmt.Fprintf(w, "description:    %s\n", d.Description)
			}
			if d.Schedule != "" {
				fmt.Fprintf(w, "schedule:       %s (next %s)\n", d.Schedule, when(d.NextFire))
			}
			fmt.Fprintf(w, "command:        %s %s\nrestart:        %s (delay %gs, stop grace %gs)\nmcp_allow:      %s\nconfig_changed: %v\n",
				d.Config.Cmd, strings.Join(d.Config.Args, " "), d.Config.Restart, d.Config.RestartDelayS, d.Config.StopGraceS, strings.Join(d.Config.MCPAllow, ","), d.ConfigChanged)
			if d.LastError != "" {
				fmt.Fprintf(w, "last error:     %s\n", d.LastError)
			}
			if d.CurrentRun != nil {
				fmt.Fprintf(w, "current run:    %d (%s, since %s)\n", d.CurrentRun.ID, d.CurrentRun.Cause, when(&d.CurrentRun.StartedAt))
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func logsCmd(g *globals) *cobra.Command {
	var rawFmt, follow bool
	var lines, maxBytes int
	var cursor uint64
	var offset int64
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Show a harness's activity entries, or its raw terminal output with --raw",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := control.LogsArgs{Name: g.qualify(cmd, args)[0], Format: "summary", Lines: lines, MaxBytes: maxBytes}
			if rawFmt {
				a.Format = "raw"
			}
			if cmd.Flags().Changed("cursor") {
				a.Cursor = &cursor
			}
			if cmd.Flags().Changed("offset") {
				a.Offset = &offset
			}
			ctx := cmd.Context()
			if follow {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
				defer stop()
			}
			w := cmd.OutOrStdout()
			for {
				var res json.RawMessage
				if err := g.call(ctx, "logs", a, &res); err != nil {
					if follow && ctx.Err() != nil {
						return nil
					}
					return err
				}
				if g.json {
					fmt.Fprintln(w, string(res))
				}
				if rawFmt {
					var r control.LogsRaw
					if err := json.Unmarshal(res, &r); err != nil {
						return err
					}
					if !g.json {
						if r.Note != "" && !follow {
							fmt.Fprintln(cmd.ErrOrStderr(), "note:", r.Note)
						}
						fmt.Fprint(w, r.Text)
					}
					next := r.NextOffset
					a.Offset = &next
				} else {
					var s control.LogsSummary
					if err := json.Unmarshal(res, &s); err != nil {
						return err
					}
					if !g.json {
						if s.Note != "" {
							fmt.Fprintln(cmd.ErrOrStderr(), "note:", s.Note)
						}
						for _, e := range s.Entries {
							prefix := ""
							if e.Kind == "event" {
								prefix = "-- "
							}
							fmt.Fprintf(w, "%s %s%s\n", e.Time.Local().Format("15:04:05"), prefix, e.Text)
						}
					}
					next := s.NextCursor
					a.Cursor = &next
				}
				if !follow {
					return nil
				}
				a.Lines = 0
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&rawFmt, "raw", false, "raw terminal bytes instead of activity entries")
	f.IntVar(&lines, "lines", 0, "at most this many entries (summary) or last lines (raw)")
	f.IntVar(&maxBytes, "max-bytes", 0, "cap the answer at this many bytes (default 256 KiB)")
	f.Uint64Var(&cursor, "cursor", 0, "only entries newer than this id (summary)")
	f.Int64Var(&offset, "offset", 0, "start at this absolute byte offset (raw)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new output until interrupted")
	addJSON(cmd, g)
	return cmd
}

func actionCmd(g *globals, op, short string) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   op + " NAME... | --all",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errcode.Errorf(errcode.InvalidArgument, "%s: name one or more harnesses, or pass --all", op)
			}
			var res control.ActionResult
			if !all {
				args = g.qualify(cmd, args)
			}
			if err := g.call(cmd.Context(), op, control.NamesArgs{Names: args, All: all}, &res); err != nil {
				return err
			}
			failed := 0
			for _, r := range res.Results {
				if r.Error != "" {
					failed++
				}
			}
			if g.json {
				if err := emit(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				for _, r := range res.Results {
					switch {
					case r.Error != "":
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", r.Name, r.Error)
					case r.Changed:
						fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", r.Name, r.State)
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "%s: already %s\n", r.Name, r.State)
					}
				}
			}
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every harness (start skips jobs)")
	addJSON(cmd, g)
	return cmd
}

func runsCmd(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "runs [NAME]",
		Short: "Show run history",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := control.RunsArgs{Limit: limit}
			if len(args) == 1 {
				a.Name = args[0]
			}
			var res []runs.Run
			if err := g.call(cmd.Context(), "runs", a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			var rows [][]string
			for _, r := range res {
				rows = append(rows, []string{fmt.Sprint(r.ID), r.Harness, string(r.Cause), pidStr(r.PID), when(&r.StartedAt), when(r.EndedAt), intPtr(r.ExitCode), r.Signal})
			}
			table(cmd.OutOrStdout(), "ID\tHARNESS\tCAUSE\tPID\tSTARTED\tENDED\tEXIT\tSIGNAL", rows)
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (newest)")
	addJSON(cmd, g)
	return cmd
}

func jobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs: schedule, next fire, last run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res []control.JobInfo
			if err := g.call(cmd.Context(), "jobs", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			var rows [][]string
			for _, j := range res {
				last, code := "-", "-"
				if j.LastRun != nil {
					last, code = fmt.Sprint(j.LastRun.ID), intPtr(j.LastRun.ExitCode)
				}
				rows = append(rows, []string{j.Name, j.State, orDash(j.Schedule), when(j.NextFire), last, code})
			}
			table(cmd.OutOrStdout(), "NAME\tSTATE\tSCHEDULE\tNEXT\tLAST RUN\tEXIT", rows)
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func triggersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "triggers",
		Short: "List armed schedule triggers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res []schedule.Trigger
			if err := g.call(cmd.Context(), "triggers", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			var rows [][]string
			for _, t := range res {
				next := t.NextFire
				rows = append(rows, []string{t.Job, t.Kind, t.Spec, when(&next), when(t.LastFired), fmt.Sprint(t.Fired), fmt.Sprint(t.Skipped)})
			}
			table(cmd.OutOrStdout(), "JOB\tKIND\tSPEC\tNEXT\tLAST FIRED\tFIRED\tSKIPPED", rows)
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func triggerCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Start a job now; with --wait, follow it and exit with its exit status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := control.TriggerArgs{Name: args[0], Wait: wait, TimeoutS: timeout.Seconds()}
			var res control.TriggerResult
			if err := g.call(cmd.Context(), "trigger", a, &res); err != nil {
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
				case !res.Waited:
					fmt.Fprintf(w, "%s: started run %d\n", res.Name, res.RunID)
				default:
					for _, e := range res.Tail {
						fmt.Fprintln(w, e.Text)
					}
					if res.TimedOut {
						fmt.Fprintf(w, "%s: run %d still running after %s\n", res.Name, res.RunID, timeout)
					} else {
						fmt.Fprintf(w, "%s: run %d exited %s%s after %dms\n", res.Name, res.RunID, intPtr(res.ExitCode), sigSuffix(res.Signal), res.DurationMS)
					}
				}
			}
			if res.Waited {
				switch {
				case res.TimedOut:
					return exitError{124}
				case res.ExitCode != nil:
					if *res.ExitCode != 0 {
						return exitError{*res.ExitCode}
					}
				case res.Signal != "":
					return exitError{128 + signalNumber(res.Signal)}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the run to its end and exit with its status")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (default 10m)")
	addJSON(cmd, g)
	return cmd
}

// signalNumber maps "SIGTERM" to 15, as a shell reports a job a signal
// ended (exit status 128+n); an unknown name counts as SIGKILL.
func signalNumber(name string) int {
	if n := unix.SignalNum(name); n != 0 {
		return int(n)
	}
	return int(unix.SIGKILL)
}

func sigSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func profilesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List profiles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res []control.ProfileInfo
			if err := g.call(cmd.Context(), "profiles", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			var rows [][]string
			for _, p := range res {
				mark := ""
				if p.Active {
					mark = "*"
				}
				rows = append(rows, []string{mark + p.Name, fmt.Sprint(p.Autostart), strings.Join(p.Harnesses, ",")})
			}
			table(cmd.OutOrStdout(), "NAME\tAUTOSTART\tHARNESSES", rows)
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func useProfileCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "use-profile NAME",
		Short: "Start a profile's harnesses and stop the others",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res control.ActionResult
			if err := g.call(cmd.Context(), "use_profile", control.NameArg{Name: args[0]}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			for _, r := range res.Results {
				if r.Changed {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", r.Name, r.State)
				}
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func reloadCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Reload the config; a bad file is refused and the running config kept",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res control.ReloadResult
			if err := g.call(cmd.Context(), "reload", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reloaded: %d added, %d removed, %d changed\n", len(res.Added), len(res.Removed), len(res.Changed))
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func daemonInfoCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon-info",
		Short: "Show the daemon's version, paths, uptime and warnings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res control.DaemonInfo
			if err := g.call(cmd.Context(), "daemon_info", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "version:   %s (protocol %s)\npid:       %d\nuptime:    %s\nconfig:    %s\nsocket:    %s\nstate dir: %s\nprofile:   %s\n",
				res.Version, res.Proto, res.PID, time.Duration(res.UptimeS*float64(time.Second)).Round(time.Second), res.Paths.Config, res.Paths.Socket, res.Paths.StateDir, orDash(res.Profile))
			fmt.Fprintf(w, "ownership: %s (%s)\n", res.Ownership.Mode, res.Ownership.Reason)
			for _, u := range res.Upstreams {
				fmt.Fprintf(w, "upstream:  %s %s (%d tools)\n", u.Key, u.State, u.Tools)
			}
			for _, warn := range res.Warnings {
				fmt.Fprintf(w, "warning:   %s\n", warn)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}

func shutdownCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shutdown",
		Short: "Stop every unit and end the daemon",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res map[string]bool
			if err := g.call(cmd.Context(), "shutdown", struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return cmd
}
