package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-dev/harness/internal/api"
)

// diffCmd is `harness diff` (docs/worktrees.md).
func diffCmd(g *globals) *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff NAME",
		Short: "What a harness changed in its worktree (or git workdir) against its merge base with its base",
		Long: "Committed, staged, unstaged and untracked changes, ignored files left out, against the merge base\n" +
			"of the worktree's branch and its base (worktree.base). A harness without a worktree whose workdir\n" +
			"is a git checkout shows its uncommitted changes. The hunks are capped (truncated says so).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d api.Diff
			if err := g.call(cmd.Context(), api.OpDiff, api.DiffArgs{Name: g.unitName(cmd, args[0]), Stat: stat}, &d); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), d)
			}
			if stat {
				renderStat(cmd.OutOrStdout(), d)
				return nil
			}
			renderPatch(cmd.OutOrStdout(), d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "only the files and their counts, as git diff --stat")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpDiff)
}

// statWidth is the widest +/- bar of --stat, as git's for an 80-column
// terminal.
const statWidth = 50

// renderStat prints d as `git diff --stat` does.
func renderStat(w io.Writer, d api.Diff) {
	name := 0
	most := 0
	for _, f := range d.Files {
		name = max(name, len(statName(f)))
		most = max(most, f.Added+f.Deleted)
	}
	digits := len(fmt.Sprint(most))
	for _, f := range d.Files {
		if f.Binary {
			fmt.Fprintf(w, " %-*s | %*s\n", name, statName(f), digits, "Bin")
			continue
		}
		plus, minus := f.Added, f.Deleted
		if most > statWidth { // scaled as git does, at least one of each kind there is
			plus, minus = scale(f.Added, most), scale(f.Deleted, most)
		}
		fmt.Fprintf(w, " %-*s | %*d %s%s\n", name, statName(f), digits, f.Added+f.Deleted,
			strings.Repeat("+", plus), strings.Repeat("-", minus))
	}
	s := d.Stat()
	line := fmt.Sprintf(" %d file%s changed", s.Files, plural(s.Files))
	if s.Added > 0 || s.Files == 0 {
		line += fmt.Sprintf(", %d insertion%s(+)", s.Added, plural(s.Added))
	}
	if s.Deleted > 0 {
		line += fmt.Sprintf(", %d deletion%s(-)", s.Deleted, plural(s.Deleted))
	}
	fmt.Fprintln(w, line)
}

func scale(n, most int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*statWidth/most)
}

func statName(f api.DiffFile) string {
	if f.OldPath != "" {
		return f.OldPath + " => " + f.Path
	}
	return f.Path
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// renderPatch prints d as a unified diff, each file headed as git heads it.
func renderPatch(w io.Writer, d api.Diff) {
	fmt.Fprintf(w, "base %s (%s) · head %s\n", d.BaseRef, short(d.Base), short(d.Head))
	if len(d.Files) == 0 {
		fmt.Fprintln(w, "no changes")
		return
	}
	for _, f := range d.Files {
		old := f.Path
		if f.OldPath != "" {
			old = f.OldPath
		}
		fmt.Fprintf(w, "\ndiff --git a/%s b/%s\n", old, f.Path)
		switch f.Status {
		case api.DiffAdded:
			fmt.Fprintf(w, "new file\n--- /dev/null\n+++ b/%s\n", f.Path)
		case api.DiffDeleted:
			fmt.Fprintf(w, "deleted file\n--- a/%s\n+++ /dev/null\n", old)
		default:
			if f.OldPath != "" {
				fmt.Fprintf(w, "%s from %s\n", f.Status, f.OldPath)
			}
			fmt.Fprintf(w, "--- a/%s\n+++ b/%s\n", old, f.Path)
		}
		if f.Binary {
			fmt.Fprintln(w, "Binary file differs")
		}
		for _, h := range f.Hunks {
			fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
			for _, l := range h.Lines {
				fmt.Fprintln(w, l)
			}
		}
	}
	if d.Truncated {
		fmt.Fprintf(w, "\n(truncated: the diff is over %d KiB; every file is listed above, those past the cut without hunks; see --stat)\n", api.MaxDiffBytes>>10)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// reviewCmd is `harness review` (docs/worktrees.md).
func reviewCmd(g *globals) *cobra.Command {
	var comments []string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "review NAME --comment \"path:line: text\"…",
		Short: "Send review comments to a harness's agent, typed as one message once it is ready",
		Long: "The comments go to the agent as one message listing path:line: text, typed once its agent is\n" +
			"ready (held until then). The command waits up to --wait for it to be typed; past that it says\n" +
			"queued and the daemon still types it when the agent is ready. A run that ends first drops it,\n" +
			"and the command says so if it is still waiting.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res api.ReviewResult
			a := api.ReviewArgs{Name: g.unitName(cmd, args[0]), Comments: comments, WaitS: wait.Seconds()}
			if err := g.call(cmd.Context(), api.OpReview, a, &res); err != nil {
				return err
			}
			if g.json {
				return emit(cmd.OutOrStdout(), res)
			}
			if res.Status == api.ReviewTyped {
				fmt.Fprintf(cmd.OutOrStdout(), "typed a review of %d comments to %s (run %d)\n", res.Comments, res.Name, res.RunID)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "queued a review of %d comments for %s (run %d): it is typed once its agent is ready\n", res.Comments, res.Name, res.RunID)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&comments, "comment", nil, `a comment, "path:line: text" (repeatable)`)
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "wait this long for the review to be typed (0: return at once, queued)")
	addJSON(cmd, g)
	return callsOps(cmd, api.OpReview)
}
