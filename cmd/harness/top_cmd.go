package main

import (
	"fmt"
	"os"

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
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("top: find this program to run attach: %w", err)
			}
			socket := g.socketPath()
			return top.Run(cmd.Context(), socket, top.Options{Attach: top.ExecAttach(exe, socket), Send: top.SendLine(socket)})
		},
	}
	// subscribe is the socket server's own, not a control op (api.Ops);
	// the attach key runs `harness attach`.
	return callsOps(cmd, api.OpList, api.OpDescribe, api.OpMCPStatus, api.OpLogs, api.OpRuns,
		api.OpStart, api.OpStop, api.OpRestart, api.OpTrigger, api.OpReload, api.OpSend)
}
