package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/attachterm"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
)

func attachCmd(g *globals) *cobra.Command {
	var readOnly bool
	var detachKeys string
	cmd := &cobra.Command{
		Use:   "attach NAME",
		Short: "Attach this terminal to a running harness (Ctrl-] detaches; the harness goes on)",
		Long: "Shows the harness's screen as it is, then live, and types your keys into it; resizing this\n" +
			"terminal resizes the harness's. Several viewers may attach at once; --read-only ones only watch.\n" +
			"--detach-keys takes keys separated by commas, each C-x or one character (default C-]).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			detach, err := attachterm.ParseDetachKeys(detachKeys)
			if err != nil {
				return err
			}
			term, err := attachterm.Open(os.Stdin, os.Stdout)
			if err != nil {
				return err
			}
			defer term.Close()
			cols, rows, err := term.Size()
			if err != nil {
				return err
			}
			name := g.unitName(cmd, args[0])
			stream, err := client.DialAttach(cmd.Context(), g.socketPath(), api.AttachArgs{Name: name, ReadOnly: readOnly, Cols: cols, Rows: rows})
			if err != nil {
				return err
			}
			if err := term.Raw(); err != nil {
				stream.Close()
				return err
			}
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
			defer stop()
			out, runErr := attachterm.Run(ctx, term, stream, attachterm.Options{Name: name, ReadOnly: readOnly, Detach: detach}, winch)
			if err := term.Close(); err != nil && runErr == nil { // the shell's modes back before we print
				runErr = err
			}
			w := cmd.ErrOrStderr()
			switch {
			case runErr != nil:
				return runErr
			case out.Detached:
				fmt.Fprintf(w, "harness: detached from %s (it goes on running)\n", name)
			case out.Ended != nil:
				fmt.Fprintf(w, "harness: %s is %s: %s\n", name, out.Ended.State, out.Ended.Message)
				if out.Ended.State == "failed" {
					return exitError{code: 1}
				}
			case ctx.Err() != nil:
				return fmt.Errorf("attach %s: interrupted by a signal", name)
			default:
				return errcode.Errorf(errcode.DaemonUnavailable, "attach %s: the daemon closed the attachment", name)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&readOnly, "read-only", false, "only watch: keys are not sent and this terminal's size is not applied")
	f.StringVar(&detachKeys, "detach-keys", attachterm.DefaultDetachKeys, "the keys that detach")
	return cmd
}
