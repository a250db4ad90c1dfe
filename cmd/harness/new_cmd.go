package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// newCmd is `harness new` (docs/agents.md): a harness written to
// harness.d/NAME.toml beside the config file, checked and started.
func newCmd(g *globals) *cobra.Command {
	var a api.NewArgs
	var promptFile string
	cmd := &cobra.Command{
		Use:   "new NAME (--agent A | -- CMD ARGS…) [--prompt TEXT | --prompt-file F] [--repo DIR] [--worktree] [--base REF]",
		Short: "Make a harness without editing TOML: writes harness.d/NAME.toml beside the config file and starts it",
		Long: "Writes harness.d/NAME.toml beside the config file (your own file is never rewritten), checks the\n" +
			"whole configuration with it as a reload does, reloads and starts it (unless --no-start). The agent's\n" +
			"program must be on the daemon's PATH, unless --no-start. harness rm NAME removes it again.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name = args[0]
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 {
					return errcode.Errorf(errcode.InvalidArgument, "new: one NAME before --, got %d", dash)
				}
				if len(args) < 2 {
					return errcode.Errorf(errcode.InvalidArgument, "new: a command after --")
				}
				a.Cmd, a.Args = args[1], args[2:]
			} else if len(args) > 1 {
				return errcode.Errorf(errcode.InvalidArgument, "new: one NAME; a command goes after --")
			}
			var err error
			if a.Repo, err = absPath(a.Repo); err != nil {
				return err
			}
			if a.PromptFile, err = absPath(promptFile); err != nil {
				return err
			}
			if a.Repo == "" && a.Project == "" {
				if a.Workdir, err = os.Getwd(); err != nil {
					return err
				}
			}
			var res api.NewResult
			if err := g.call(cmd.Context(), api.OpNew, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			w := cmd.OutOrStdout()
			for _, warn := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", warn)
			}
			if res.Started {
				fmt.Fprintf(w, "wrote %s and started %s (%s)\n", res.File, res.Name, res.State)
			} else {
				fmt.Fprintf(w, "wrote %s; harness start %s starts it\n", res.File, res.Name)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Agent, "agent", "", "a known agent (harness agents lists them)")
	f.StringVar(&a.Prompt, "prompt", "", "the task, typed to the agent once it is ready")
	f.StringVar(&promptFile, "prompt-file", "", "a file holding the task, read at every run")
	f.StringVar(&a.Repo, "repo", "", "the git repository to work in (default: this directory, as workdir)")
	f.BoolVar(&a.Worktree, "worktree", false, "work in a git worktree of --repo of its own, on branch harness/NAME")
	f.StringVar(&a.Base, "base", "", "the commit or branch the worktree starts from (default: the repository's HEAD)")
	f.StringVar(&a.Model, "model", "", "the model the agent uses")
	f.StringVar(&a.Approval, "approval", "", "ask or auto: whether the agent asks before it changes anything")
	f.StringVar(&a.Project, "project", "", "a project that is up: its directory is the repository")
	f.BoolVar(&a.NoStart, "no-start", false, "write it, do not start it (the program need not be on PATH yet)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpNew)
}

// absPath makes a path given on the command line absolute ("" stays "").
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", errcode.Errorf(errcode.InvalidArgument, "%s: %v", p, err)
	}
	return abs, nil
}

// rmCmd is `harness rm`: the undoing of harness new.
func rmCmd(g *globals) *cobra.Command {
	var a api.RmArgs
	cmd := &cobra.Command{
		Use:   "rm NAME [--force]",
		Short: "Stop a harness made by harness new and remove its file and worktree",
		Long: "Stops NAME, removes its worktree and its harness.d file, and reloads. A worktree with uncommitted\n" +
			"changes or commits not on its base is refused (naming them) unless --force. A harness of your own\n" +
			"config file is refused: that file is yours to edit.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name = args[0]
			var res api.RmResult
			if err := g.call(cmd.Context(), api.OpRm, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%s)\n", res.Name, res.File)
			if res.Worktree != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "removed its worktree %s (its branch stays)\n", res.Worktree)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&a.Force, "force", false, "remove the worktree even with uncommitted changes or unlanded commits")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpRm)
}

// agentsCmd is `harness agents`: the agent programs on the daemon's PATH.
func agentsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "The agent programs harness new can run, found on the daemon's PATH with their versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res []api.AgentProgram
			if err := g.call(cmd.Context(), api.OpAgents, api.AgentsArgs{}, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tPROGRAM\tVERSION\tPATH")
			for _, p := range res {
				ver, path := p.Version, p.Path
				if !p.Found {
					ver, path = "missing", "not on PATH"
				} else if p.Error != "" {
					ver = "? (" + p.Error + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Agent, filepath.Base(p.Program), ver, path)
			}
			return tw.Flush()
		},
	}
	addJSON(cmd, g)
	return callsOps(cmd, api.OpAgents)
}

// auditCmd is `harness audit`: who changed what, through which door.
func auditCmd(g *globals) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "audit [--since D]",
		Short: "The audit log: every state-changing operation, its actor, door, target and outcome",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var a api.AuditArgs
			if since != "" {
				now := time.Now()
				t, err := parseSince(since, now)
				if err != nil {
					return err
				}
				a.SinceS = max(now.Sub(t).Seconds(), 0.001)
			}
			var res api.AuditResult
			if err := g.call(cmd.Context(), api.OpAudit, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			if res.Dropped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d audit entries were dropped since the daemon started\n", res.Dropped)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tACTOR\tDOOR\tOP\tTARGET\tOUTCOME")
			for _, e := range res.Entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), e.Actor, e.Door, e.Op, e.Target, e.Outcome)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries of this last duration (10m, 2h) or since this RFC 3339 time")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpAudit)
}
