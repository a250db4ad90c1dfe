package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

func profilesCmd(g *globals) *cobra.Command {
	return listVerb(g, listing[api.ProfileInfo]{
		use: "profiles", short: "List profiles", op: api.OpProfiles,
		header: "NAME\tAUTOSTART\tHARNESSES",
		row: func(p api.ProfileInfo) []string {
			mark := ""
			if p.Active {
				mark = "*"
			}
			return []string{mark + p.Name, fmt.Sprint(p.Autostart), strings.Join(p.Harnesses, ",")}
		},
	}, nil)
}

func useProfileCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "use-profile NAME",
		Short: "Start a profile's harnesses and stop the others",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res api.ActionResult
			if err := g.call(cmd.Context(), api.OpUseProfile, api.NameArg{Name: args[0]}, &res); err != nil {
				return err
			}
			return printActions(cmd, g, res, false)
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpUseProfile)
}

func reloadCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Reload the config; a bad file is refused and the running config kept",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res api.ReloadResult
			if err := g.call(cmd.Context(), api.OpReload, struct{}{}, &res); err != nil {
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
	return callsOps(cmd, api.OpReload)
}

func daemonInfoCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon-info",
		Short: "Show the daemon's version, paths, uptime and warnings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res api.DaemonInfo
			if err := g.call(cmd.Context(), api.OpDaemonInfo, struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "version:   %s (protocol %s)\npid:       %d\nuptime:    %s\nconfig:    %s\nsocket:    %s\nstate dir: %s\nprofile:   %s\n",
				res.Version, res.Proto, res.PID, time.Duration(res.UptimeS*float64(time.Second)).Round(time.Second), res.Paths.Config, res.Paths.Socket, res.Paths.StateDir, orDash(res.Profile))
			fmt.Fprintf(w, "ownership: %s (%s)\n", res.Ownership.Mode, res.Ownership.Reason)
			if res.MCPURL != "" {
				fmt.Fprintf(w, "mcp url:   %s\n", res.MCPURL)
			}
			if res.DashboardURL != "" {
				fmt.Fprintf(w, "dashboard: %s\n", res.DashboardURL)
			}
			if res.WebURL != "" {
				fmt.Fprintf(w, "web:       %s (pair a phone: harness pair)\n", res.WebURL)
			}
			if res.WebFingerprint != "" {
				fmt.Fprintf(w, "web cert:  SHA-256 %s\n", res.WebFingerprint)
			}
			if res.TailnetURL != "" {
				fmt.Fprintf(w, "tailnet:   %s\n", res.TailnetURL)
			}
			if res.TailnetError != "" {
				fmt.Fprintf(w, "tailnet error: %s\n", res.TailnetError)
			}
			if res.WebError != "" {
				fmt.Fprintf(w, "web error: %s\n", res.WebError)
			}
			for _, u := range res.Upstreams {
				fmt.Fprintf(w, "upstream:  %s %s (%d tools)\n", u.Key, u.State, u.Tools)
			}
			if c := res.CallLog; c != nil {
				fmt.Fprintf(w, "call log:  %s (%d written, %d dropped, arguments %s)\n", c.Path, c.Written, c.Dropped, map[bool]string{true: "kept", false: "not kept"}[c.Args])
			}
			for _, warn := range res.Warnings {
				fmt.Fprintf(w, "warning:   %s\n", warn)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpDaemonInfo)
}

func shutdownCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shutdown",
		Short: "Stop every unit and end the daemon",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res api.OK
			if err := g.call(cmd.Context(), api.OpShutdown, struct{}{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpShutdown)
}
