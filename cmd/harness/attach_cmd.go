package main

import (
	"context"
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
			at, err := openAttach(detachKeys)
			if err != nil {
				return err
			}
			defer at.term.Close()
			name := g.unitName(cmd, args[0])
			stream, err := client.DialAttach(cmd.Context(), g.socketPath(), api.AttachArgs{Name: name, ReadOnly: readOnly, Cols: at.cols, Rows: at.rows})
			if err != nil {
				return err
			}
			out, interrupted, runErr := at.run(cmd.Context(), stream, attachterm.Options{Name: name, ReadOnly: readOnly})
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
			case interrupted:
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

// attachTerm is this process's terminal opened for an attach (attach, and
// run without --detach): the detach keys parsed and the size to attach at.
type attachTerm struct {
	term       *attachterm.Terminal
	detach     []byte
	cols, rows int
}

// openAttach parses detachKeys and opens the terminal; the caller closes
// at.term (run closes it too: closing twice is harmless).
func openAttach(detachKeys string) (*attachTerm, error) {
	detach, err := attachterm.ParseDetachKeys(detachKeys)
	if err != nil {
		return nil, err
	}
	term, err := attachterm.Open(os.Stdin, os.Stdout)
	if err != nil {
		return nil, err
	}
	cols, rows, err := term.Size()
	if err != nil {
		term.Close()
		return nil, err
	}
	return &attachTerm{term: term, detach: detach, cols: cols, rows: rows}, nil
}

// run puts the terminal in raw mode and joins it to stream until the
// detach keys, the unit's end, the stream's end or a signal; it closes
// the terminal (the shell's modes back) before it returns, so the caller
// may print. interrupted says a signal (or ctx) ended it.
func (at *attachTerm) run(ctx context.Context, stream attachterm.Stream, o attachterm.Options) (out attachterm.Outcome, interrupted bool, err error) {
	if err := at.term.Raw(); err != nil {
		stream.Close()
		return attachterm.Outcome{}, false, err
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer stop()
	o.Detach = at.detach
	out, err = attachterm.Run(ctx, at.term, stream, o, winch)
	if cerr := at.term.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return out, ctx.Err() != nil, err
}
