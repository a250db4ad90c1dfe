package main

import (
	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/tui/top"
)

func topCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Full-screen dashboard of the fleet: states, previews, logs, runs; start/stop from the keyboard",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return top.Run(cmd.Context(), g.socketPath(), top.Options{})
		},
	}
	// subscribe is the socket server's own, not a control op (api.Ops).
	return callsOps(cmd, api.OpList, api.OpDescribe, api.OpMCPStatus, api.OpLogs, api.OpRuns,
		api.OpStart, api.OpStop, api.OpRestart, api.OpTrigger, api.OpReload)
}
