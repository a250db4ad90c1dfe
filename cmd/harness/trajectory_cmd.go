package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// trajectoriesCmd is `harness trajectories NAME`: the kept run transcripts
// of a harness with harvest_trajectory = true.
func trajectoriesCmd(g *globals) *cobra.Command {
	return listVerb(g, listing[api.TrajectoryInfo]{
		use: "trajectories NAME", short: "List the kept run transcripts of a harness (harvest_trajectory = true)",
		op: api.OpListTrajectories, args: cobra.ExactArgs(1),
		request: func(cmd *cobra.Command, args []string) (any, error) {
			return api.NameArg{Name: g.unitName(cmd, args[0])}, nil
		},
		header: "RUN\tCAUSE\tSTARTED\tENDED\tEXIT\tENTRIES\tBYTES",
		row: func(r api.TrajectoryInfo) []string {
			return []string{fmt.Sprint(r.Run), orDash(string(r.Cause)), when(r.StartedAt), when(r.EndedAt),
				intPtr(r.ExitCode) + sigSuffix(r.Signal), fmt.Sprint(r.Entries), fmt.Sprint(r.Bytes)}
		},
	}, nil)
}

// trajectoryCmd is `harness trajectory NAME RUN`: one page of a run's
// transcript; --cursor continues after a previous page's next_cursor.
func trajectoryCmd(g *globals) *cobra.Command {
	var cursor uint64
	var maxBytes int
	cmd := &cobra.Command{
		Use:   "trajectory NAME RUN",
		Short: "Show the transcript of one run of a harness (harvest_trajectory = true)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := strconv.ParseUint(args[1], 10, 64)
			if err != nil || run == 0 {
				return errcode.Errorf(errcode.InvalidArgument, "RUN must be a run id (from `harness trajectories %s`), not %q", args[0], args[1])
			}
			a := api.TrajectoryArgs{Name: g.unitName(cmd, args[0]), Run: run, MaxBytes: maxBytes}
			if cmd.Flags().Changed("cursor") {
				a.Cursor = &cursor
			}
			var res api.Trajectory
			if err := g.call(cmd.Context(), api.OpGetTrajectory, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			if res.Note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", res.Note)
			}
			printEntries(w, res.Entries)
			if res.Truncated {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: harness trajectory %s %d --cursor %d\n", res.Name, res.Run, res.NextCursor)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&cursor, "cursor", 0, "only entries newer than this id (a previous next_cursor)")
	f.IntVar(&maxBytes, "max-bytes", 0, "cap the answer at this many bytes (default 256 KiB)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpGetTrajectory)
}
