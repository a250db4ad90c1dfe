package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

func logsCmd(g *globals) *cobra.Command {
	var rawFmt, follow bool
	var lines, maxBytes int
	var cursor uint64
	var offset int64
	var run uint64
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Show a harness's activity entries, or its raw terminal output with --raw",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := api.LogsArgs{Name: g.unitName(cmd, args[0]), Format: api.LogsSummaryFormat, Lines: lines, MaxBytes: maxBytes, Run: run}
			if rawFmt {
				a.Format = api.LogsRawFormat
			}
			if cmd.Flags().Changed("cursor") {
				a.Cursor = &cursor
			}
			if cmd.Flags().Changed("offset") {
				a.Offset = &offset
			}
			ctx := cmd.Context()
			if follow {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
				defer stop()
			}
			w := cmd.OutOrStdout()
			for {
				var res json.RawMessage
				if err := g.call(ctx, api.OpLogs, a, &res); err != nil {
					if follow && ctx.Err() != nil {
						return nil
					}
					return err
				}
				if g.json {
					fmt.Fprintln(w, string(res))
				}
				if rawFmt {
					var r api.LogsRaw
					if err := json.Unmarshal(res, &r); err != nil {
						return err
					}
					if !g.json {
						if r.Note != "" && !follow {
							fmt.Fprintln(cmd.ErrOrStderr(), "note:", r.Note)
						}
						fmt.Fprint(w, r.Text)
					}
					next := r.NextOffset
					a.Offset = &next
				} else {
					var s api.LogsSummary
					if err := json.Unmarshal(res, &s); err != nil {
						return err
					}
					if !g.json {
						if s.Note != "" {
							fmt.Fprintln(cmd.ErrOrStderr(), "note:", s.Note)
						}
						printEntries(w, s.Entries)
					}
					next := s.NextCursor
					a.Cursor = &next
				}
				if !follow {
					return nil
				}
				a.Lines = 0
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&rawFmt, "raw", false, "raw terminal bytes instead of activity entries")
	f.IntVar(&lines, "lines", 0, "at most this many entries (summary) or last lines (raw)")
	f.IntVar(&maxBytes, "max-bytes", 0, "cap the answer at this many bytes (default 256 KiB)")
	f.Uint64Var(&cursor, "cursor", 0, "only entries newer than this id (summary)")
	f.Int64Var(&offset, "offset", 0, "start at this absolute byte offset (raw)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new output until interrupted")
	f.Uint64Var(&run, "run", 0, "only the entries of this run (see `harness runs NAME`)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpLogs)
}
