package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/attachterm"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

// runCmd is `harness run` (docs/design/agents.md): a scratch harness.
func runCmd(g *globals) *cobra.Command {
	var name, detachKeys string
	var detach bool
	cmd := &cobra.Command{
		Use:   "run [--name N] [--detach] -- CMD ARGS…",
		Short: "Run a command as a scratch harness: attached, never restarted, forgotten when it ends",
		Long: "Starts CMD in this directory as a harness that is not in the config file. Attached (as harness\n" +
			"attach) unless --detach; when the program ends this exits with its exit code (128+n for a signal).\n" +
			"Detaching (Ctrl-]) leaves it running; `harness stop NAME` ends it. It shows in list while it lives,\n" +
			"is never restarted, and is forgotten when it ends (a reload keeps it; a daemon restart does not).\n" +
			"The name defaults to the command's, made unique; a configured harness's name is refused.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			a := api.RunArgs{Name: name, Cmd: args[0], Args: args[1:], Workdir: wd, Detach: detach}
			if detach {
				var res api.RunResult
				if err := g.call(cmd.Context(), api.OpRun, a, &res); err != nil {
					return err
				}
				if g.json {
					return emit(cmd.OutOrStdout(), res)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "started %s (run %d, pid %d); harness attach %s, harness stop %s\n", res.Name, res.RunID, res.PID, res.Name, res.Name)
				return nil
			}
			return runAttached(cmd, g, a, detachKeys)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything from CMD on is the program's
	f.StringVar(&name, "name", "", "the harness's name (default: the command's, made unique)")
	f.BoolVar(&detach, "detach", false, "start it and return; it runs until it ends or harness stop NAME")
	f.StringVar(&detachKeys, "detach-keys", attachterm.DefaultDetachKeys, "the keys that detach")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpRun, api.OpRuns)
}

// runAttached starts the scratch harness and attaches this terminal to it
// until it ends (the exit status is the program's) or the user detaches.
func runAttached(cmd *cobra.Command, g *globals, a api.RunArgs, detachKeys string) error {
	at, err := openAttach(detachKeys)
	if err != nil {
		return err
	}
	defer at.term.Close()
	var res api.RunResult
	if err := g.call(cmd.Context(), api.OpRun, a, &res); err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	stream, err := client.DialAttach(cmd.Context(), g.socketPath(), api.AttachArgs{Name: res.Name, Cols: at.cols, Rows: at.rows})
	if err != nil {
		// It may have ended before the terminal attached: its run says how.
		if code := errcode.Of(err); code == errcode.NotRunning || code == errcode.UnknownHarness {
			fmt.Fprintf(w, "harness: %s ended before this terminal attached\n", res.Name)
			return scratchExit(cmd.Context(), g, res)
		}
		return err
	}
	out, interrupted, runErr := at.run(cmd.Context(), stream, attachterm.Options{Name: res.Name})
	switch {
	case runErr != nil:
		return runErr
	case out.Detached:
		fmt.Fprintf(w, "harness: detached from %s (it goes on running; harness stop %s ends it)\n", res.Name, res.Name)
		return nil
	case out.Ended != nil:
		return scratchExit(cmd.Context(), g, res)
	case interrupted:
		return fmt.Errorf("run %s: interrupted by a signal (it goes on running; harness stop %s ends it)", res.Name, res.Name)
	}
	return errcode.Errorf(errcode.DaemonUnavailable, "run %s: the daemon closed the attachment", res.Name)
}

// scratchExit waits for the scratch harness's run to be recorded as ended
// and answers its exit status: the exit code, or 128+n for a signal.
func scratchExit(ctx context.Context, g *globals, res api.RunResult) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var rs []api.Run
		if err := g.call(ctx, api.OpRuns, api.RunsArgs{Name: res.Name}, &rs); err != nil {
			return err
		}
		for _, r := range rs {
			if r.ID != res.RunID || r.EndedAt == nil {
				continue
			}
			switch {
			case r.ExitCode != nil && *r.ExitCode != 0:
				return exitError{code: *r.ExitCode}
			case r.ExitCode != nil:
				return nil
			case r.Signal != "":
				return exitError{code: 128 + signalNumber(r.Signal)}
			}
			return exitError{code: 1}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: the end of run %d was not recorded: %w", res.Name, res.RunID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
