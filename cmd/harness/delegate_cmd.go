package main

import (
	"fmt"
	"path/filepath"
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
	var mk api.DelegateArgs
	cmd := &cobra.Command{
		Use:   "delegate NAME PROMPT [--agent A [--repo DIR] [--worktree] [--base REF]] [--timeout D]",
		Short: "Hand a prompt to an agent harness and print its answer once its turn ends; exit 124 on timeout",
		Long: "Types PROMPT to the agent of harness NAME once it is ready, as `harness send --enter` would, waits for\n" +
			"the turn it starts to end and prints the agent's last answer from its transcript. If the time runs out\n" +
			"first (--timeout, default 10m) it says what the agent is doing — waiting for a person, with the prompt\n" +
			"and choices `harness answer` takes — and exits 124; the agent goes on either way. With --agent, the\n" +
			"harness is made first, as `harness new NAME --agent A` makes it.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return errcode.Errorf(errcode.InvalidArgument, "delegate: --timeout must not be negative")
			}
			a := mk
			a.Name, a.Prompt, a.TimeoutS = g.unitName(cmd, args[0]), args[1], timeout.Seconds()
			if a.Repo != "" {
				abs, err := filepath.Abs(a.Repo)
				if err != nil {
					return errcode.Errorf(errcode.InvalidArgument, "delegate: --repo %s: %v", a.Repo, err)
				}
				a.Repo = abs
			}
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
			case res.Status == api.DelegateCompleted:
				if res.Answer != "" {
					fmt.Fprintln(w, res.Answer)
				} else {
					fmt.Fprintf(w, "%s: turn done (%s)\n", res.Name, res.Note)
				}
				if res.Diff != nil {
					fmt.Fprintf(w, "%s: %d files changed, +%d -%d (harness diff %s)\n", res.Name, res.Diff.Files, res.Diff.Added, res.Diff.Deleted, res.Name)
				}
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
	cmd.Flags().StringVar(&mk.Agent, "agent", "", "make the harness first, running this agent (harness agents lists them)")
	cmd.Flags().StringVar(&mk.Repo, "repo", "", "with --agent: the git repository it works in")
	cmd.Flags().BoolVar(&mk.Worktree, "worktree", false, "with --agent: in a git worktree of --repo of its own")
	cmd.Flags().StringVar(&mk.Base, "base", "", "with --agent --worktree: the commit or branch the worktree starts from")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long and exit 124 (default 10m, at most 1h); the agent goes on")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpDelegate)
}
