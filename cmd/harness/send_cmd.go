package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

func sendCmd(g *globals) *cobra.Command {
	var keys []string
	var enter bool
	cmd := &cobra.Command{
		Use:   "send NAME [TEXT]",
		Short: "Type text and keys into a running harness (answer its prompts)",
		Long: "Types TEXT (as a bracketed paste when the program asked for one), then each --key in order, then\n" +
			"Enter with --enter. Keys: Enter, Tab, Esc, Up, Down, Left, Right, Backspace, Space, C-a … C-z.\n" +
			"Text and keys together are at most 16 KiB.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.SendArgs{Name: g.unitName(cmd, args[0]), Keys: keys, Enter: enter}
			if len(args) == 2 {
				a.Text = args[1]
			}
			var res api.SendResult
			if err := g.call(cmd.Context(), api.OpSend, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sent %d bytes to %s (run %d)\n", res.Bytes, res.Name, res.RunID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&keys, "key", nil, "a named key to type after the text (repeatable, in order)")
	f.BoolVar(&enter, "enter", false, "press Enter at the end")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpSend)
}
