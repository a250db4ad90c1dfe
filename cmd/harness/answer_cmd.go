package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// answerCmd is `harness answer NAME CHOICE` (docs/design/agents.md).
func answerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "answer NAME CHOICE",
		Short: "Pick a choice of the prompt a waiting agent shows (by its text or number)",
		Long: "When the harness's agent is waiting on a dialog (harness list: agent_state waiting, with its prompt and\n" +
			"choices), picks CHOICE, given by its text as shown or its number (1 for the first), by pressing the keys\n" +
			"that dialog needs. Fails with not_waiting when the agent is not waiting, and names the choices when\n" +
			"CHOICE is not one of them.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.AnswerArgs{Name: g.unitName(cmd, args[0]), Choice: args[1]}
			var res api.AnswerResult
			if err := g.call(cmd.Context(), api.OpAnswer, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "answered %s: %d. %s (keys %s)\n", res.Name, res.Number, res.Choice, strings.Join(res.Keys, " "))
			after := string(res.After.AgentState)
			if res.After.AgentState == api.AgentWaiting && res.After.Prompt != "" {
				after += ": " + res.After.Prompt
			}
			if after != "" {
				fmt.Fprintf(w, "agent now %s\n", after)
			}
			return nil
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpAnswer)
}
