package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/spf13/cobra"
)

// opsAnnotation names, on a cobra command, the control operations it
// calls; the verb test holds every op of api.Ops to a verb through it.
const opsAnnotation = "harness.ops"

// callsOps records on cmd the ops it calls and returns cmd.
func callsOps(cmd *cobra.Command, ops ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[opsAnnotation] = strings.Join(ops, ",")
	return cmd
}

// listing describes a verb whose answer is an array shown as a table.
type listing[T any] struct {
	use, short string
	op         string
	args       cobra.PositionalArgs
	// request builds the op's arguments from the command line.
	request func(cmd *cobra.Command, args []string) (any, error)
	header  string
	row     func(T) []string
}

// listVerb builds a list-style verb: one call, then the answer as a table,
// or with --json as the daemon encoded it (the same bytes the structs would
// encode to, without decoding a large answer only to encode it again).
func listVerb[T any](g *globals, l listing[T], setup func(*cobra.Command)) *cobra.Command {
	if l.args == nil {
		l.args = cobra.NoArgs
	}
	cmd := &cobra.Command{
		Use:   l.use,
		Short: l.short,
		Args:  l.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			var req any = struct{}{}
			if l.request != nil {
				var err error
				if req, err = l.request(cmd, args); err != nil {
					return err
				}
			}
			return printListing(cmd, g, l, req)
		},
	}
	if setup != nil {
		setup(cmd)
	}
	addJSON(cmd, g)
	return callsOps(cmd, l.op)
}

// printListing calls l.op with req and prints the answer.
func printListing[T any](cmd *cobra.Command, g *globals, l listing[T], req any) error {
	var raw json.RawMessage
	if err := g.call(cmd.Context(), l.op, req, &raw); err != nil {
		return err
	}
	if g.json {
		return emitRaw(cmd.OutOrStdout(), raw)
	}
	var items []T
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("%s: decode answer: %w", l.op, err)
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, l.row(it))
	}
	table(cmd.OutOrStdout(), l.header, rows)
	return nil
}

func table(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func intPtr(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func pidStr(pid int) string {
	if pid == 0 {
		return "-"
	}
	return fmt.Sprint(pid)
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sigSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// printEntries prints activity entries a line each: the time, then the
// text; lifecycle events are marked "-- ".
func printEntries(w io.Writer, entries []api.LogEntry) {
	for _, e := range entries {
		prefix := ""
		if e.Kind == api.EntryEvent {
			prefix = "-- "
		}
		fmt.Fprintf(w, "%s %s%s\n", e.Time.Local().Format("15:04:05"), prefix, e.Text)
	}
}
