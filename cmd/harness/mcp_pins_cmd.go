package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// mcpPinsCmd shows an upstream's pinned tools and the ones held back.
func mcpPinsCmd(g *globals) *cobra.Command {
	var diff bool
	cmd := &cobra.Command{
		Use:   "pins KEY",
		Short: "Show an upstream's pinned tools and the ones held back because they changed",
		Long: `harness mcp pins KEY lists the tools of upstream KEY (or PROJECT/KEY)
the daemon pinned at their first listing, and the ones it holds back:
changed since their pin (quarantined), or new under pin = "strict".
With --diff, each change is shown field by field, pinned then current.
Approve with harness mcp approve KEY [TOOL].`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r api.MCPPinsResult
			if err := g.call(cmd.Context(), api.OpMCPPins, api.MCPPinsArgs{Key: args[0], Diff: diff}, &r); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				return emit(out, r)
			}
			if r.Warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", r.Warning)
			}
			rows := make([][]string, 0, len(r.Pins))
			for _, p := range r.Pins {
				pinned := "-"
				if !p.PinnedAt.IsZero() {
					pinned = p.PinnedAt.Local().Format("2006-01-02 15:04:05")
				}
				rows = append(rows, []string{p.Tool, p.State, orDash(strings.Join(p.Changed, ",")), pinned})
			}
			table(out, "TOOL\tSTATE\tCHANGED\tPINNED", rows)
			for _, p := range r.Pins {
				for _, d := range p.Diff {
					fmt.Fprintf(out, "\n--- %s %s (pinned)\n+++ %s %s (current)\n", p.Tool, d.Field, p.Tool, d.Field)
					for _, l := range strings.Split(d.Pinned, "\n") {
						fmt.Fprintln(out, "-"+l)
					}
					for _, l := range strings.Split(d.Current, "\n") {
						fmt.Fprintln(out, "+"+l)
					}
				}
			}
			return nil
		},
	}
	addJSON(cmd, g)
	cmd.Flags().BoolVar(&diff, "diff", false, "show each change, pinned then current")
	return callsOps(cmd, api.OpMCPPins)
}

// mcpApproveCmd pins the current form of held tools and serves them again.
func mcpApproveCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approve KEY [TOOL]",
		Short: "Approve a held-back tool of an upstream (all of them without TOOL): pin it as listed now",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.MCPApproveArgs{Key: args[0]}
			if len(args) == 2 {
				a.Tool = args[1]
			}
			var r api.MCPApproveResult
			if err := g.call(cmd.Context(), api.OpMCPApprove, a, &r); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), r)
			}
			if len(r.Approved) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing held back\n", r.Key)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: approved %s\n", r.Key, strings.Join(r.Approved, ", "))
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpMCPApprove)
}
