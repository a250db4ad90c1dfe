package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// delegateCmd is `harness delegate NAME PROMPT [--timeout D]`
// (docs/design/agents.md): the prompt typed to the agent once it is ready,
// its answer printed once its turn ends; exit 124 on timeout, saying
// what the agent is doing.
func delegateCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "delegate NAME PROMPT [--timeout D]",
		Short: "Hand a prompt to an agent harness and print its answer once its turn ends; exit 124 on timeout",
		Long: "Types PROMPT to the agent of harness NAME once it is ready, as `harness send --enter` would, waits for\n" +
			"the turn it starts to end and prints the agent's last answer from its transcript. If the time runs out\n" +
			"first (--timeout, default 10m) it says what the agent is doing — waiting for a person, with the prompt\n" +
			"and choices `harness answer` takes — and exits 124; the agent goes on either way.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return errcode.Errorf(errcode.InvalidArgument, "delegate: --timeout must not be negative")
			}
			a := api.DelegateArgs{Name: g.unitName(cmd, args[0]), Prompt: args[1], TimeoutS: timeout.Seconds()}
			var res api.DelegateResult
			if err := g.call(cmd.Context(), api.OpDelegate, a, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch {
			case g.json:
				if err := emit(w, res); err != nil {
					return err
				}
			case res.Status == api.DelegateCompleted && res.Answer != "":
				fmt.Fprintln(w, res.Answer)
			case res.Status == api.DelegateCompleted:
				fmt.Fprintf(w, "%s: turn done (%s)\n", res.Name, res.Note)
			case !res.Typed:
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: the agent was not ready within the timeout (it is %s); nothing typed\n", res.Name, agentText(res.Agent))
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s; the agent is %s\n", res.Name, res.Status, agentText(res.Agent))
			}
			switch res.Status {
			case api.DelegateTimedOut:
				return exitError{124}
			case api.DelegateFailed:
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long and exit 124 (default 10m, at most 1h); the agent goes on")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpDelegate)
}
