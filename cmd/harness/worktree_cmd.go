package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// worktreeCmd groups the worktree verbs (docs/design/resources.md).
func worktreeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "A harness's own git worktree",
	}
	cmd.AddCommand(worktreeRemoveCmd(g))
	return cmd
}

func worktreeRemoveCmd(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a stopped harness's worktree (refused with uncommitted changes unless --force); its branch stays",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res api.WorktreeRemoveResult
			if err := g.call(cmd.Context(), api.OpWorktreeRemove, api.WorktreeRemoveArgs{Name: args[0], Force: force}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			if !res.Removed {
				fmt.Fprintf(cmd.OutOrStdout(), "%s has no worktree at %s\n", res.Name, res.Path)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s (branch %s stays)\n", res.Path, res.Branch)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove it even with uncommitted changes")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpWorktreeRemove)
}
