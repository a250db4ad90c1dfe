package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// followWaitS is how long one poll of `calls --follow` waits in the daemon
// for the next call; the daemon answers as soon as one is logged.
const followWaitS = 25

func callsCmd(g *globals) *cobra.Command {
	var harness, tool, since string
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "calls",
		Short: "Show the MCP call log: who called which tool, when, and how it went",
		Long: `harness calls prints the MCP tools/call and prompts/get requests the daemon
answered, through any session (socket or HTTP): time, caller (harness#run,
operator or unattributed), tool, outcome (ok or the error code), duration and
transport. Without --follow it prints the newest --limit calls; with --follow
it then prints each new call as it is logged. --json prints the answer object
({calls, next_cursor, dropped}); with --follow, one call per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := api.CallsArgs{Tool: tool, Limit: limit}
			if harness != "" {
				a.Harness = g.unitName(cmd, harness)
			}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				a.Since = &t
			}
			ctx := cmd.Context()
			if follow {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
				defer stop()
			}
			var res api.CallsResult
			if err := g.call(ctx, api.OpCalls, a, &res); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if g.json && !follow {
				return emit(w, res)
			}
			if err := printCalls(w, res.Calls, g.json); err != nil {
				return err
			}
			if res.Dropped > 0 && !g.json {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d call records were dropped since the daemon started (its writer fell behind or the disk failed)\n", res.Dropped)
			}
			if !follow {
				return nil
			}
			a.Limit = 0
			a.WaitS = followWaitS
			for {
				cursor := res.NextCursor
				a.Cursor = &cursor
				if err := g.call(ctx, api.OpCalls, a, &res); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if err := printCalls(w, res.Calls, g.json); err != nil {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&harness, "harness", "", "only calls made by this harness (inside a project, its own names)")
	f.StringVar(&tool, "tool", "", "only calls of tools (or prompts) matching this glob, e.g. 'github__*'")
	f.StringVar(&since, "since", "", "only calls made in this last duration (10m, 2h) or since this RFC 3339 time")
	f.IntVar(&limit, "limit", 50, "at most this many calls (the newest)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new calls until interrupted")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpCalls)
}

// parseSince reads --since: a duration back from now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errcode.Errorf(errcode.InvalidArgument, "--since %s: want a positive duration", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, errcode.Errorf(errcode.InvalidArgument, "--since %q: want a duration such as 10m or 2h, or an RFC 3339 time", s)
}

// printCalls prints one call per line: a table row, or with asJSON the
// record as one line of JSON.
func printCalls(w io.Writer, calls []api.CallRecord, asJSON bool) error {
	for _, c := range calls {
		if asJSON {
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintln(w, callLine(c)); err != nil {
			return err
		}
	}
	return nil
}

func callLine(c api.CallRecord) string {
	who := c.Caller
	if c.Caller == api.CallerHarness {
		who = fmt.Sprintf("%s#%d", c.Harness, c.RunID)
	}
	tool := c.Tool
	if c.Kind == api.CallPrompt {
		tool = "prompt:" + c.Tool
	}
	d := time.Duration(c.DurationMS * float64(time.Millisecond)).Round(time.Microsecond)
	return fmt.Sprintf("%s  %-20s %-28s %-20s %9s  %s", c.Time.Local().Format("2006-01-02 15:04:05.000"), who, tool, c.Outcome, d, c.Transport)
}

// callColumns are CALLS, ERRORS, P50 and P99 of a table row.
func callColumns(s api.CallStats) []string {
	var errs uint64
	for _, n := range s.Errors {
		errs += n
	}
	if s.Calls == 0 {
		return []string{"0", "0", "-", "-"}
	}
	ms := func(v float64) string {
		return time.Duration(v * float64(time.Millisecond)).Round(time.Microsecond).String()
	}
	return []string{fmt.Sprint(s.Calls), fmt.Sprint(errs), ms(s.P50MS), ms(s.P99MS)}
}
