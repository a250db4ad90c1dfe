package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// notifyCmd is `harness notify`: the [notify.NAME] tables (docs/design/events.md).
func notifyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Notifications: send a sample through a [notify.NAME] table",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(notifyTestCmd(g))
	return cmd
}

func notifyTestCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test NAME",
		Short: "Send a sample message through [notify.NAME] now (no queue, no cooldown)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res api.NotifyTestResult
			if err := g.call(cmd.Context(), api.OpNotifyTest, api.NotifyTestArgs{Name: args[0]}, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if g.json {
				return emit(w, res)
			}
			status := ""
			if res.Status != 0 {
				status = fmt.Sprintf(" (HTTP %d)", res.Status)
			}
			fmt.Fprintf(w, "notify.%s: delivered%s after %d attempt(s), %dms\n", res.Name, status, res.Attempts, res.DurationMS)
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpNotifyTest)
}
