package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// turnsCmd prints the conversation of a harness's agent from the agent's
// own transcript (docs/design/agents.md).
func turnsCmd(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "turns NAME [RUN]",
		Short: "Show the conversation of a harness's agent: prompts, answers, tool calls, tokens",
		Long: `harness turns reads the agent's own transcript of a run (Claude Code's and
Codex's session files, Gemini CLI's chats) and prints its session id, model,
token totals and cost, then each turn: who spoke, an excerpt of what was said,
and the tool calls with their outcome. Secrets are masked. RUN defaults to the
current run, else the last one.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.TurnsArgs{Name: g.unitName(cmd, args[0]), Limit: limit}
			if len(args) == 2 {
				n, err := strconv.ParseUint(args[1], 10, 64)
				if err != nil || n == 0 {
					return errcode.Errorf(errcode.InvalidArgument, "run must be a run id, not %s", errcode.Quote(args[1]))
				}
				a.Run = n
			}
			var res api.TurnsResult
			if err := g.call(cmd.Context(), api.OpTurns, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			renderTurns(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many turns, the newest (default 50)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpTurns)
}

func renderTurns(w io.Writer, r api.TurnsResult) {
	fmt.Fprintf(w, "%s run %d (%s)  session %s  model %s\n", r.Name, r.RunID, r.Agent, orDash(r.SessionID), orDash(r.Model))
	cost := "-"
	if r.CostUSD != nil {
		cost = fmt.Sprintf("$%.4f", *r.CostUSD)
	}
	t := r.Tokens
	fmt.Fprintf(w, "tokens in %d, out %d, cache read %d, cache write %d  cost %s\n", t.Input, t.Output, t.CacheRead, t.CacheWrite, cost)
	if r.LastAPIError != "" {
		fmt.Fprintf(w, "last API error: %s\n", r.LastAPIError)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(w, "(%d older turns not shown)\n", r.Omitted)
	}
	for _, turn := range r.Turns {
		fmt.Fprintf(w, "\n[%s]", turn.Role)
		if turn.Time != nil {
			fmt.Fprintf(w, " %s", turn.Time.Local().Format("15:04:05"))
		}
		fmt.Fprintln(w)
		if txt := strings.TrimSpace(turn.Text); txt != "" {
			for _, l := range strings.Split(txt, "\n") {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		for _, tc := range turn.ToolCalls {
			fmt.Fprintf(w, "  tool %s %s (%s)\n", tc.Name, tc.Input, orDash(tc.Outcome))
		}
	}
}
