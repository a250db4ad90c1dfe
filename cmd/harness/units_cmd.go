package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

func listCmd(g *globals) *cobra.Command {
	return unitsVerb(g, "list", "List harnesses and their state", func(*cobra.Command) (api.ListArgs, error) {
		return api.ListArgs{}, nil
	})
}

// unitsVerb is list and ps: the list op with args the verb computes, as
// a table of units.
func unitsVerb(g *globals, use, short string, args func(*cobra.Command) (api.ListArgs, error)) *cobra.Command {
	return listVerb(g, listing[api.UnitInfo]{
		use: use, short: short, op: api.OpList,
		request: func(cmd *cobra.Command, _ []string) (any, error) { return args(cmd) },
		header:  "NAME\tSTATE\tACTIVITY\tAGENT\tENABLED\tPID\tRESTARTS\tEXIT\tSCHEDULE\tDESCRIPTION",
		row: func(u api.UnitInfo) []string {
			state := u.State
			if u.Hold != nil {
				state += " (held: " + string(u.Hold.Reason) + ")"
			}
			return []string{u.Name, state, activityText(u), agentShort(u.AgentView), fmt.Sprint(u.Enabled), pidStr(u.PID), fmt.Sprint(u.RestartCount), intPtr(u.LastExitCode), u.Schedule, u.Description}
		},
	}, nil)
}

func describeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show one harness: state, config, current run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d api.Description
			if err := g.call(cmd.Context(), api.OpDescribe, api.NameArg{Name: g.unitName(cmd, args[0])}, &d); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), d)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "name:           %s\nstate:          %s\nenabled:        %v\npid:            %s\nrestarts:       %d\nlast exit:      %s\n",
				d.Name, d.State, d.Enabled, pidStr(d.PID), d.RestartCount, intPtr(d.LastExitCode))
			if d.Activity != "" {
				fmt.Fprintf(w, "activity:       %s\n", activityText(d.UnitInfo))
			}
			if d.Agent != "" {
				fmt.Fprintf(w, "agent:          %s\n", agentText(d.AgentView))
			}
			if sc := d.AgentScreen; sc != nil && !sc.Recognised {
				fmt.Fprintf(w, "agent screen:   not recognised since %s: %s\n", when(sc.UnrecognisedSince), sc.Note)
			}
			if d.Config.Hooks != nil && !*d.Config.Hooks {
				fmt.Fprintf(w, "hooks:          off (state from the screen only)\n")
			}
			if d.Description != "" {
				fmt.Fprintf(w, "description:    %s\n", d.Description)
			}
			if d.Schedule != "" {
				fmt.Fprintf(w, "schedule:       %s (next %s)\n", d.Schedule, when(d.NextFire))
			}
			if d.Config.URL != "" {
				// A remote upstream: header names only, values are secrets.
				fmt.Fprintf(w, "url:            %s\nheaders:        %s\n", d.Config.URL, orDash(strings.Join(d.Config.Headers, ", ")))
			} else {
				fmt.Fprintf(w, "command:        %s %s\n", d.Config.Cmd, strings.Join(d.Config.Args, " "))
			}
			if wt := d.Config.Worktree; wt != nil {
				fmt.Fprintf(w, "worktree:       %s\n", worktreeText(wt))
				if wt.SetupFailed != "" {
					fmt.Fprintf(w, "setup_failed:   %s\n", strings.ReplaceAll(wt.SetupFailed, "\n", "\n                "))
				}
			}
			if len(d.Config.Ports) > 0 {
				fmt.Fprintf(w, "ports:          %s\n", portsText(d.Config.Ports))
			}
			if d.Sandbox != nil {
				fmt.Fprintf(w, "sandbox:        %s\n", sandboxText(d.Sandbox))
			}
			fmt.Fprintf(w, "restart:        %s (delay %gs, stop grace %gs)\nmcp_allow:      %s\nconfig_changed: %v\n",
				d.Config.Restart, d.Config.RestartDelayS, d.Config.StopGraceS, strings.Join(d.Config.MCPAllow, ","), d.ConfigChanged)
			if len(d.Grant) > 0 {
				fmt.Fprintf(w, "grant:          %s\n", grantText(d.Grant))
			}
			if d.LastError != "" {
				fmt.Fprintf(w, "last error:     %s\n", d.LastError)
			}
			if d.Hold != nil {
				fmt.Fprintf(w, "hold:           %s\n", holdText(d.Hold))
			}
			if d.CurrentRun != nil {
				fmt.Fprintf(w, "current run:    %d (%s, since %s)\n", d.CurrentRun.ID, d.CurrentRun.Cause, when(&d.CurrentRun.StartedAt))
				if len(d.CurrentRun.ToolCalls) > 0 {
					fmt.Fprintf(w, "tool calls:     %s\n", toolCallsText(d.CurrentRun.RunAgent))
				}
				if d.CurrentRun.LastAPIError != "" {
					fmt.Fprintf(w, "last api error: %s\n", oneLine(d.CurrentRun.LastAPIError))
				}
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpDescribe)
}

// actionCmd is start, stop and restart: the op of the same name.
func actionCmd(g *globals, op, short string) *cobra.Command {
	var all, force, fresh bool
	cmd := &cobra.Command{
		Use:   op + " NAME... | --all",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errcode.Errorf(errcode.InvalidArgument, "%s: name one or more harnesses, or pass --all", op)
			}
			var res api.ActionResult
			if !all {
				args = g.qualify(cmd, args)
			}
			if err := g.call(cmd.Context(), op, api.NamesArgs{Names: args, All: all, Force: force, Fresh: fresh}, &res); err != nil {
				return err
			}
			return printActions(cmd, g, res, true)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every harness (start skips jobs)")
	if op != api.OpStop {
		cmd.Flags().BoolVar(&force, "force", false, "start past a hold (hours, budget, usage limit), this once")
	}
	if op == api.OpRestart {
		cmd.Flags().BoolVar(&fresh, "fresh", false, "start a new conversation instead of resuming the agent's session (resume = true)")
	}
	addJSON(cmd, g)
	return callsOps(cmd, op)
}

// printActions renders what start, stop, restart and use-profile did. With
// unchanged, units left as they were are listed too. Any unit that failed
// makes the verb exit 1.
func printActions(cmd *cobra.Command, g *globals, res api.ActionResult, unchanged bool) error {
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
			case unchanged:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: already %s\n", r.Name, r.State)
			}
		}
	}
	if failed > 0 {
		return exitError{1}
	}
	return nil
}

// grantText renders an effective grant as "harness=read gitea=read,write",
// the facade first, then the upstreams by key.
func grantText(g map[string][]api.Class) string {
	keys := slices.Sorted(maps.Keys(g))
	if i := slices.Index(keys, api.FacadeNamespace); i > 0 {
		keys = append([]string{api.FacadeNamespace}, slices.Delete(keys, i, i+1)...)
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		cs := make([]string, 0, len(g[k]))
		for _, c := range g[k] {
			cs = append(cs, string(c))
		}
		parts = append(parts, k+"="+orDash(strings.Join(cs, ",")))
	}
	return strings.Join(parts, " ")
}

// worktreeText renders a harness's worktree as "PATH (branch B from
// BASE, repo R)", saying when it is not made yet.
func worktreeText(wt *api.WorktreeView) string {
	s := wt.Path + " (branch " + wt.Branch
	if wt.Base != "" {
		s += " from " + wt.Base
	}
	s += ", repo " + wt.Repo + ")"
	if !wt.Created {
		s += ", made at the first start"
	}
	return s
}

// holdText renders a hold as "hours until 2026-12-07 08:00 (outside hours Mon-Fri 08:00-19:00)".
// sandboxText is the levels a run's sandbox reached and what it refused
// (docs/sandbox.md).
func sandboxText(sb *api.SandboxView) string {
	s := "files " + sb.FS + ", network " + sb.Network
	if sb.Tmp != "" {
		s += ", /tmp " + sb.Tmp
	}
	if sb.Missing != "" {
		s += "; missing: " + sb.Missing
	}
	s += fmt.Sprintf("; %d refused by the proxy", sb.Denied)
	if sb.LastDenied != "" {
		s += " (last " + sb.LastDenied + ")"
	}
	if sb.FilesDeniedCount != nil {
		s += fmt.Sprintf("; %d file refusals", *sb.FilesDeniedCount)
		if sb.LastFileDenied != "" {
			s += " (last " + sb.LastFileDenied + ")"
		}
	}
	switch {
	case sb.FilesDenied != "" && sb.FilesDeniedCount != nil:
		s += ", " + sb.FilesDenied
	case sb.FilesDenied != "":
		s += "; file refusals " + sb.FilesDenied
	}
	return s
}

func holdText(h *api.Hold) string {
	s := string(h.Reason)
	if h.Until != nil {
		s += " until " + h.Until.Local().Format("2006-01-02 15:04:05")
	}
	if h.Note != "" {
		s += " (" + h.Note + ")"
	}
	return s
}

// describeToolCalls is how many of a run's tool calls describe's text
// names, the newest; --json has the run's whole list.
const describeToolCalls = 10

// toolCallsText names a run's newest tool calls with their outcomes:
// "Bash ok, Read error (+3 earlier)".
func toolCallsText(r api.RunAgent) string {
	calls, earlier := r.ToolCalls, r.ToolCallsOmitted
	if n := len(calls) - describeToolCalls; n > 0 {
		calls, earlier = calls[n:], earlier+n
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = c.Name + " " + orDash(c.Outcome)
	}
	s := strings.Join(parts, ", ")
	if earlier > 0 {
		s += fmt.Sprintf(" (+%d earlier)", earlier)
	}
	return s
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

// portsText renders ports as HARNESS_PORTS has them: "4123,4124".
func portsText(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}
