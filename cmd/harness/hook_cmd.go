package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// hookCmd is what an agent's hook configuration runs (harness installs it
// for each run of a known agent): it tells the daemon the agent's hook
// event with the JSON the agent gave it, as the run its HARNESS_MCP_TOKEN
// names. It prints nothing (an agent may read a hook's output as context)
// and never exits 2 (which some agents take as "block the tool").
func hookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook EVENT [PAYLOAD]",
		Short: "Tell the daemon an agent's hook event (run by the agent's hooks, with the JSON payload on stdin)",
		Long: `harness hook is what the hook configuration harness installs in a known agent
runs: the agent's hook event (Stop, Notification, …) and its JSON payload,
on stdin or as the second argument, go to the daemon, which updates the
agent's state at once. It authenticates with HARNESS_MCP_TOKEN, which each
run of a harness has; without a live run's token the call is refused.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var payload []byte
			if len(args) == 2 {
				payload = []byte(args[1])
			} else {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), api.MaxHookPayload+1))
				if err != nil {
					return fmt.Errorf("hook: read the payload: %w", err)
				}
				payload = b
			}
			if len(payload) > api.MaxHookPayload {
				return errcode.Errorf(errcode.InvalidArgument, "hook: the payload is over %d bytes", api.MaxHookPayload)
			}
			a := api.HookArgs{Event: args[0], Token: os.Getenv(tokenEnv)}
			if len(payload) > 0 {
				if !json.Valid(payload) {
					return errcode.Errorf(errcode.InvalidArgument, "hook %s: the payload is not JSON", args[0])
				}
				a.Payload = payload
			}
			var res api.HookResult
			if err := g.call(cmd.Context(), api.OpHook, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpHook)
}
