package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// landCmd is `harness land` (docs/worktrees.md).
func landCmd(g *globals) *cobra.Command {
	var a api.LandArgs
	cmd := &cobra.Command{
		Use:   "land NAME",
		Short: "Bring a harness's branch home: commit its work, merge it into base (or --push, --pr), stop it and remove its worktree",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name = args[0]
			var res api.LandResult
			if err := g.call(cmd.Context(), api.OpLand, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			out := cmd.OutOrStdout()
			for _, n := range res.Notes {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			if res.Committed != "" {
				fmt.Fprintf(out, "committed the agent's changes on %s: %s\n", res.Branch, shortOID(res.Committed))
			}
			switch res.Mode {
			case api.LandPush:
				fmt.Fprintf(out, "pushed %s (%s)\n", res.Branch, shortOID(res.Commit))
				if res.PRURL != "" {
					fmt.Fprintln(out, res.PRURL)
				}
			default:
				fmt.Fprintf(out, "landed %s on %s (%s): %s\n", res.Branch, res.Base, res.Mode, shortOID(res.Commit))
			}
			if res.Removed {
				fmt.Fprintf(out, "stopped %s and removed its worktree\n", res.Harness)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Message, "message", "", "commit message for what the agent left uncommitted (default: the first line of its last answer)")
	f.BoolVar(&a.Squash, "squash", false, "bring the branch into base as one commit")
	f.BoolVar(&a.Push, "push", false, "push the branch to the repository's remote instead of merging it")
	f.BoolVar(&a.PR, "pr", false, "after the push, open a pull request with pr_command and print its URL (implies --push)")
	f.BoolVar(&a.Keep, "keep", false, "keep the harness running and its worktree")
	f.BoolVar(&a.Force, "force", false, "land even while the agent is working")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpLand)
}

// shortOID is a commit's abbreviation.
func shortOID(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
