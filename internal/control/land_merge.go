package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
)

// The steps of a land its journal records.
const (
	stepCommitted = "committed" // what the agent left is committed
	stepMerging   = "merging"   // the commit that lands on base is made
	stepMerged    = "merged"    // base has it
	stepPushed    = "pushed"    // the remote has the branch (and the pull request is open)
	stepRemoving  = "removing"  // stopping, teardown, removal
)

// landJournal is how far a land got, kept in the state dir until it is
// done, so that the next land completes one the daemon did not finish.
type landJournal struct {
	Step      string `json:"step"`
	Mode      string `json:"mode"`
	Base      string `json:"base"`
	Branch    string `json:"branch"`
	PR        bool   `json:"pr,omitempty"`
	Keep      bool   `json:"keep,omitempty"`
	Remote    string `json:"remote,omitempty"`
	Committed string `json:"committed,omitempty"`
	// Target is the commit made to land on base (merge or squash), or the
	// branch's head for a fast-forward.
	Target string `json:"target,omitempty"`
	Commit string `json:"commit,omitempty"`
	PRURL  string `json:"pr_url,omitempty"`
}

// landPath is the journal of name's land, without its extension.
func (c *Control) landPath(name string) string {
	return filepath.Join(c.opt.Paths.StateDir, "land", logs.EscapeUnit(name))
}

func (c *Control) readLandJournal(name string) (landJournal, bool) {
	var j landJournal
	data, err := os.ReadFile(c.landPath(name) + ".json")
	if err != nil {
		return j, false
	}
	if err := json.Unmarshal(data, &j); err != nil || j.Step == "" {
		c.log.Warn("land journal unreadable: starting anew", logkey.Unit, name, logkey.Err, err)
		return landJournal{}, false
	}
	return j, true
}

func (c *Control) dropLandJournal(name string) {
	if err := os.Remove(c.landPath(name) + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("land journal: remove", logkey.Unit, name, logkey.Err, err)
	}
}

// save writes the journal; a land whose journal cannot be written goes on
// (it only loses the resumption).
func (l *lander) save() {
	l.j.Base, l.j.Branch, l.j.PR, l.j.Keep = l.res.Base, l.branch, l.a.PR, l.a.Keep
	if l.j.Mode == "" {
		switch {
		case l.a.Push:
			l.j.Mode = api.LandPush
		case l.a.Squash:
			l.j.Mode = api.LandSquash
		}
	}
	if err := writeJSONFile(l.c.landPath(l.u.name)+".json", l.j); err != nil {
		l.c.log.Warn("land journal: write", logkey.Unit, l.u.name, logkey.Err, err)
	}
}

// merge brings the branch into base in the repository's checkout: the
// commit that lands (the branch's head for a fast-forward, else a merge or
// squash commit made from merge-tree's tree, outside any checkout) is
// recorded, then the checkout fast-forwards to it, which git does whole
// or not at all. A base that already has it is done.
func (l *lander) merge(ctx context.Context) error {
	c, a := l.c, l.a
	base := "refs/heads/" + l.res.Base
	head, err := c.git(ctx, l.repo, "rev-parse", "refs/heads/"+l.branch)
	if err != nil {
		return fmt.Errorf("%s: land: branch %s: %v: %w", a.Name, l.branch, err, errcode.ErrInternal)
	}
	l.res.Merged = true
	if prev := l.j.Commit; prev != "" && prev != head && l.resumed {
		l.note("the branch %s was rewritten since the interrupted land (%s, now %s)", l.branch, short(prev), short(head))
	}
	l.j.Commit = head
	l.noteRewritten(ctx, head)
	done := func(mode string) error {
		l.res.Mode = mode
		l.res.Commit, _ = c.git(ctx, l.repo, "rev-parse", base)
		l.j.Mode, l.j.Step = mode, stepMerged
		if !a.Keep {
			l.save()
		}
		return nil
	}
	if l.j.Target != "" && c.isAncestor(ctx, l.repo, l.j.Target, base) {
		return done(orDefault(l.j.Mode, api.LandMerge))
	}
	if c.isAncestor(ctx, l.repo, head, base) {
		if l.j.Step != stepMerging {
			l.note("%s already has everything on %s: nothing to merge", l.res.Base, l.branch)
		}
		return done(orDefault(l.j.Mode, api.LandFastForward))
	}
	baseHead, err := c.git(ctx, l.repo, "rev-parse", base)
	if err != nil {
		return fmt.Errorf("%s: land: base %s: %v: %w", a.Name, l.res.Base, err, errcode.ErrInternal)
	}
	mode, target := api.LandFastForward, head
	if a.Squash || !c.isAncestor(ctx, l.repo, baseHead, head) {
		if !a.Squash {
			// Since the worktree was made, when known: a rewritten
			// branch forks lower, though base stood still.
			from := l.start()
			if from == "" {
				from, _ = c.git(ctx, l.repo, "merge-base", baseHead, head)
			}
			if from != "" && from != baseHead {
				n, _ := c.git(ctx, l.repo, "rev-list", "--count", from+".."+baseHead)
				l.note("%s moved on by %s commits since %s forked: landed with a merge commit", l.res.Base, n, l.branch)
			}
		}
		out, err := c.git(ctx, l.repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", baseHead, head)
		if err != nil {
			files, _ := l.conflicts(ctx, l.res.Base, head)
			return errcode.ErrConflict.Errorf("%s: landing %s on %s conflicts in %s (%v); base was not changed, the branch keeps its commit", a.Name, l.branch, l.res.Base, strings.Join(files, ", "), err)
		}
		tree, _, _ := strings.Cut(out, "\n")
		trailers := "\n\nHarness: " + a.Name + "\nAgent: " + l.h.Agent
		args := []string{"commit-tree", tree, "-p", baseHead}
		if a.Squash {
			mode = api.LandSquash
			args = append(args, "-m", l.message(ctx)+trailers)
		} else {
			mode = api.LandMerge
			args = append(args, "-p", head, "-m", fmt.Sprintf("Merge branch '%s' (harness %s)%s", l.branch, a.Name, trailers))
		}
		target, err = c.gitEnv(ctx, l.repo, nil, identity(ctx, c, l.repo), args...)
		if err != nil {
			return fmt.Errorf("%s: land: git commit-tree: %v: %w", a.Name, err, errcode.ErrInternal)
		}
	}
	l.j.Mode, l.j.Target, l.j.Step = mode, target, stepMerging
	l.save()
	if _, err := c.git(ctx, l.repo, "merge", "--ff-only", "-q", target); err != nil {
		return errcode.Errorf(errcode.InvalidArgument, "%s: land: the checkout %s did not take the %s (%v): nothing was merged; land again", a.Name, l.repo, mode, err)
	}
	return done(mode)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// isAncestor reports whether a is an ancestor of b (or b itself).
func (c *Control) isAncestor(ctx context.Context, repo, a, b string) bool {
	_, err := c.git(ctx, repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// noteRewritten says when the branch no longer has the commit its
// worktree was made at: it was rewritten (rebased, reset, amended) under
// the agent. Its head is what lands all the same.
func (l *lander) noteRewritten(ctx context.Context, head string) {
	start := l.start()
	if start == "" || l.c.isAncestor(ctx, l.repo, start, head) {
		return
	}
	l.note("%s was rewritten since its worktree was made: it no longer has %s, where it started; its head %s is what landed", l.branch, short(start), short(head))
}

// start is the commit the worktree was made at; "" when unknown (a
// worktree made before it was recorded).
func (l *lander) start() string {
	b, _ := os.ReadFile(l.wt + ".start")
	return strings.TrimSpace(string(b))
}
