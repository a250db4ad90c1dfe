package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// screenCmd is `harness screen NAME [--scrollback N] [--ansi] [--json]`
// (docs/design/terminals.md): what the harness's terminal shows now.
func screenCmd(g *globals) *cobra.Command {
	var scrollback int
	var ansi bool
	cmd := &cobra.Command{
		Use:   "screen NAME",
		Short: "Show what a running harness's terminal shows now (--ansi keeps its colours)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.ScreenArgs{Name: g.unitName(cmd, args[0]), Scrollback: scrollback, ANSI: ansi}
			var s api.Screen
			if err := g.call(cmd.Context(), api.OpScreen, a, &s); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), s)
			}
			if s.Note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", s.Note)
			}
			var b strings.Builder
			for _, l := range s.Scrollback {
				b.WriteString(l + "\n")
			}
			for _, l := range screenRows(s.Lines) {
				b.WriteString(l + "\n")
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), b.String())
			return err
		},
	}
	cmd.Flags().IntVar(&scrollback, "scrollback", 0, "print up to N lines that scrolled off the screen first")
	cmd.Flags().BoolVar(&ansi, "ansi", false, "keep the colours and attributes (for a terminal)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpScreen)
}

// screenRows drops the blank rows below the last one with text: a
// 40-row screen showing a prompt should not print 38 empty lines.
func screenRows(rows []string) []string {
	n := len(rows)
	for n > 0 && isBlankRow(rows[n-1]) {
		n--
	}
	return rows[:n]
}

// isBlankRow: nothing but spaces and SGR sequences (an --ansi row that
// shows nothing still resets its style).
func isBlankRow(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
				j++
			}
			if j >= len(s) || s[j] != 'm' {
				return false
			}
			i = j
		default:
			return false
		}
	}
	return true
}

// waitCmd is `harness wait NAME --idle D [--timeout D]` (docs/design/terminals.md) and
// `harness wait NAME --state S[,S] [--timeout D]` (docs/design/agents.md): exit 0 once the
// harness has been idle that long, or its agent is in one of the states;
// 124 on timeout.
func waitCmd(g *globals) *cobra.Command {
	var idle, timeout time.Duration
	var states []string
	cmd := &cobra.Command{
		Use:   "wait NAME (--idle D | --state S[,S]) [--timeout D]",
		Short: "Wait until a harness has been idle (no output) for D, or its agent is in a state; exit 124 on timeout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			byState := cmd.Flags().Changed("state")
			if byState == cmd.Flags().Changed("idle") {
				return errcode.Errorf(errcode.InvalidArgument, "wait: give --idle (how long the harness must have been quiet, e.g. --idle 5s) or --state (agent states, e.g. --state ready,waiting)")
			}
			if idle < 0 || timeout < 0 {
				return errcode.Errorf(errcode.InvalidArgument, "wait: --idle and --timeout must not be negative")
			}
			a := api.WaitArgs{Name: g.unitName(cmd, args[0]), IdleS: idle.Seconds(), TimeoutS: timeout.Seconds()}
			for _, s := range states {
				if s = strings.TrimSpace(s); s != "" {
					a.State = append(a.State, api.AgentState(s))
				}
			}
			if byState && len(a.State) == 0 {
				return errcode.Errorf(errcode.InvalidArgument, "wait: --state needs at least one agent state")
			}
			var res api.WaitResult
			if err := g.call(cmd.Context(), api.OpWait, a, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch {
			case g.json:
				if err := emit(w, res); err != nil {
					return err
				}
			case res.TimedOut && byState:
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: agent not %s within the timeout (it is %s)\n", res.Name, strings.Join(states, " or "), agentText(res.AgentView))
			case res.TimedOut:
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: not idle for %s within the timeout\n", res.Name, idle)
			case byState:
				fmt.Fprintf(w, "%s: %s\n", res.Name, agentText(res.AgentView))
			default:
				fmt.Fprintf(w, "%s: idle for %.1fs\n", res.Name, res.IdleS)
			}
			if res.TimedOut {
				return exitError{124}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&idle, "idle", 0, "how long the harness must have been idle (at least its idle_after)")
	cmd.Flags().StringSliceVar(&states, "state", nil, "agent states to wait for: starting, working, waiting, ready, limited, error (comma separated)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long and exit 124 (default 10m)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpWait)
}

// activityText is a running harness's activity for a table: "busy", or
// "idle 12s"; "-" for a unit without a process.
func activityText(u api.UnitInfo) string {
	switch {
	case u.Activity == "":
		return "-"
	case u.Activity == api.ActivityIdle && u.IdleS != nil:
		return "idle " + (time.Duration(*u.IdleS) * time.Second).String()
	}
	return u.Activity
}
