package control

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Land answers `land` (docs/worktrees.md). Every refusal comes before
// anything changes: the agent working, the checkout not on base or dirty,
// a conflict (test-merged with merge-tree, nothing written), no remote.
// Then it stops the harness (unless keep), commits what the agent left,
// lands the branch and removes the worktree, writing each step reached to
// a journal in the state dir: a land the daemon did not live to finish is
// completed by the next one (land_journal.go). It runs on the caller's
// goroutine; git is the git program.
func (c *Control) Land(ctx context.Context, a api.LandArgs) (api.LandResult, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.LandResult{}, err
	}
	h := u.harness()
	if h == nil || h.Worktree == nil {
		return api.LandResult{}, errcode.Errorf(errcode.InvalidArgument, "%s has no worktree: there is no branch of its own to land", a.Name)
	}
	mu := c.unitLock(u.name)
	if !mu.TryLock() {
		return api.LandResult{}, errcode.Errorf(errcode.Busy, "%s: a land or setup of it is under way", a.Name)
	}
	defer mu.Unlock()
	l := &lander{c: c, u: u, h: h, a: a, repo: h.Worktree.Repo, wt: c.worktreePath(u.name), branch: h.Worktree.BranchFor(u.name)}
	return l.run(ctx)
}

// lander is one land in progress.
type lander struct {
	c           *Control
	u           *unit
	h           *config.Harness
	a           api.LandArgs
	repo, wt    string
	branch      string
	res         api.LandResult
	j           landJournal
	resumed     bool
	hasWorktree bool
}

func (l *lander) note(format string, args ...any) {
	l.res.Notes = append(l.res.Notes, fmt.Sprintf(format, args...))
}

func (l *lander) run(ctx context.Context) (api.LandResult, error) {
	c, a := l.c, &l.a
	l.res = api.LandResult{Harness: a.Name, Branch: l.branch}
	if j, ok := c.readLandJournal(l.u.name); ok {
		l.j, l.resumed = j, true
		a.Squash, a.Push, a.PR, a.Keep = j.Mode == api.LandSquash, j.Mode == api.LandPush, j.PR, j.Keep
		l.note("completing an interrupted land of %s (it had reached: %s)", a.Name, j.Step)
	}
	if a.PR {
		a.Push = true
	}
	_, err := os.Stat(filepath.Join(l.wt, ".git"))
	l.hasWorktree = err == nil
	if !l.hasWorktree && !l.resumed {
		return l.res, errcode.Errorf(errcode.InvalidArgument, "%s has no worktree at %s: nothing to land", a.Name, l.wt)
	}
	if !a.Force && l.u.sup.AgentStatus().AgentState == api.AgentWorking {
		return l.res, errcode.Errorf(errcode.Busy, "%s's agent is working: land it once it is ready, or with --force", a.Name)
	}
	if err := l.checks(ctx); err != nil {
		return l.res, err
	}
	// From here on the land changes things: a caller that goes away (a
	// session of the very agent being stopped) must not cut it in the
	// middle. Every step is bounded on its own.
	ctx = context.WithoutCancel(ctx)
	res, err := l.act(ctx)
	if err != nil {
		// A land that failed by itself left a consistent state that the
		// next one starts from anew (its commit is kept; merge and push
		// are checked again), possibly in another mode; only a land the
		// daemon did not live to finish leaves its journal.
		c.dropLandJournal(l.u.name)
	}
	return res, err
}

// act is the part of the land that changes things.
func (l *lander) act(ctx context.Context) (api.LandResult, error) {
	c, a := l.c, &l.a
	if !a.Keep {
		if err := l.u.sup.Stop(ctx); err != nil {
			return l.res, fmt.Errorf("%s: land: stop: %w", a.Name, err)
		}
	}
	// Committing is idempotent (nothing left, nothing committed), so an
	// interrupted land commits again whatever came after its commit.
	if l.hasWorktree && (l.j.Step == "" || l.j.Step == stepCommitted) {
		if err := l.commit(ctx); err != nil {
			return l.res, err
		}
		l.j.Step = stepCommitted
		l.save()
	}
	var err error
	if a.Push {
		err = l.push(ctx)
	} else {
		err = l.merge(ctx)
	}
	if err != nil {
		return l.res, err
	}
	if !a.Keep {
		l.j.Step = stepRemoving
		l.save()
		l.remove(ctx)
	}
	c.dropLandJournal(l.u.name)
	c.log.Info("landed", logkey.Unit, l.u.name, logkey.Mode, l.res.Mode, logkey.Path, l.wt)
	return l.res, nil
}

// checks refuses, before anything changes, a land that cannot be done.
func (l *lander) checks(ctx context.Context) error {
	c, a := l.c, l.a
	base := l.h.Worktree.Base
	if l.resumed && l.j.Base != "" {
		base = l.j.Base
	}
	if base == "" {
		cur, err := c.git(ctx, l.repo, "symbolic-ref", "--short", "-q", "HEAD")
		if err != nil || cur == "" {
			return errcode.Errorf(errcode.InvalidArgument, "%s: the checkout %s is on no branch and worktree.base is not set: switch it to the branch to land on", a.Name, l.repo)
		}
		base = cur
	}
	l.res.Base = base
	if l.hasWorktree {
		if on, _ := c.git(ctx, l.wt, "symbolic-ref", "--short", "-q", "HEAD"); on != l.branch {
			return errcode.Errorf(errcode.InvalidArgument, "%s: its worktree %s is on %q, not its branch %s: switch it back (git -C %s switch %s)", a.Name, l.wt, on, l.branch, l.wt, l.branch)
		}
	}
	if a.Push {
		if l.j.Step == stepPushed {
			return nil
		}
		remote, err := l.remote(ctx)
		if err != nil {
			return err
		}
		l.j.Remote = remote
		return nil
	}
	if _, err := c.git(ctx, l.repo, "rev-parse", "--verify", "-q", "refs/heads/"+base); err != nil {
		return errcode.Errorf(errcode.InvalidArgument, "%s: base %q is not a branch of %s: only a branch can be landed on (or use --push)", a.Name, base, l.repo)
	}
	if l.j.Step == stepMerged || l.j.Step == stepRemoving {
		return nil
	}
	if cur, _ := c.git(ctx, l.repo, "symbolic-ref", "--short", "-q", "HEAD"); cur != base {
		return errcode.Errorf(errcode.InvalidArgument, "%s: the checkout %s is on %q, not %s: switch it (git -C %s switch %s) and land again", a.Name, l.repo, cur, base, l.repo, base)
	}
	st, err := c.git(ctx, l.repo, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return fmt.Errorf("%s: land: status of %s: %v: %w", a.Name, l.repo, err, errcode.ErrInternal)
	}
	if st != "" {
		return errcode.Errorf(errcode.InvalidArgument, "%s: the checkout %s has uncommitted changes (%d paths): commit or stash them, then land again", a.Name, l.repo, len(strings.Split(st, "\n")))
	}
	if !l.hasWorktree {
		return nil
	}
	// The test merge: what the branch would be with the agent's
	// uncommitted work, merged with base in memory only.
	head, err := l.snapshot(ctx)
	if err != nil {
		return err
	}
	if files, err := l.conflicts(ctx, base, head); err != nil {
		return err
	} else if len(files) > 0 {
		return errcode.ErrConflict.Errorf("%s: landing %s on %s would conflict in %s; nothing was changed: bring %s into the branch in its worktree (%s), then land again",
			a.Name, l.branch, base, strings.Join(files, ", "), base, l.wt)
	}
	return nil
}

// snapshot is the commit the branch would have with everything in the
// worktree committed, made with a scratch index so that neither the
// worktree nor its index changes; the branch's head when it is clean.
func (l *lander) snapshot(ctx context.Context) (string, error) {
	c := l.c
	st, err := c.git(ctx, l.wt, "status", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("%s: land: status of %s: %v: %w", l.a.Name, l.wt, err, errcode.ErrInternal)
	}
	if st == "" {
		return c.git(ctx, l.wt, "rev-parse", "HEAD")
	}
	index := c.landPath(l.u.name) + ".index"
	if err := os.MkdirAll(filepath.Dir(index), 0o700); err != nil {
		return "", fmt.Errorf("%s: land: %w", l.a.Name, err)
	}
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	steps := [][]string{{"read-tree", "HEAD"}, {"add", "-A"}}
	for _, s := range steps {
		if _, err := c.gitEnv(ctx, l.wt, nil, env, s...); err != nil {
			return "", fmt.Errorf("%s: land: git %s: %v: %w", l.a.Name, s[0], err, errcode.ErrInternal)
		}
	}
	tree, err := c.gitEnv(ctx, l.wt, nil, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("%s: land: git write-tree: %v: %w", l.a.Name, err, errcode.ErrInternal)
	}
	return c.gitEnv(ctx, l.wt, nil, identity(ctx, c, l.wt), "commit-tree", tree, "-p", "HEAD", "-m", "harness: land test")
}

// conflicts merges base and head in memory (git merge-tree) and lists the
// files that would conflict.
func (l *lander) conflicts(ctx context.Context, base, head string) ([]string, error) {
	out, err := l.c.gitInput(ctx, l.repo, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "refs/heads/"+base, head)
	if err == nil {
		return nil, nil
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%s: land: git merge-tree: %v: %w", l.a.Name, err, errcode.ErrInternal)
	}
	var files []string
	for _, f := range lines[1:] {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files, nil
}

// commit commits everything the agent left in the worktree, with the
// message given, else the first line of its last answer, and trailers
// naming the harness and the agent.
func (l *lander) commit(ctx context.Context) error {
	c := l.c
	if _, err := c.git(ctx, l.wt, "add", "-A"); err != nil {
		return fmt.Errorf("%s: land: git add: %v: %w", l.a.Name, err, errcode.ErrInternal)
	}
	if _, err := c.git(ctx, l.wt, "diff", "--cached", "--quiet"); err == nil {
		return nil // nothing uncommitted
	}
	msg := l.message(ctx)
	args := []string{"commit", "-q", "-m", msg, "--trailer", "Harness: " + l.a.Name, "--trailer", "Agent: " + l.h.Agent}
	if _, err := c.gitEnv(ctx, l.wt, nil, identity(ctx, c, l.wt), args...); err != nil {
		return fmt.Errorf("%s: land: git commit in %s: %v: %w", l.a.Name, l.wt, err, errcode.ErrInternal)
	}
	l.res.Committed, _ = c.git(ctx, l.wt, "rev-parse", "HEAD")
	l.j.Committed = l.res.Committed
	return nil
}

// message is the commit message: the one given, else the first line of
// the agent's last answer, else "harness: NAME".
func (l *lander) message(ctx context.Context) string {
	if m := strings.TrimSpace(l.a.Message); m != "" {
		return m
	}
	if tr, err := l.c.Turns(ctx, api.TurnsArgs{Name: l.a.Name, Limit: 20}); err == nil {
		for i := len(tr.Turns) - 1; i >= 0; i-- {
			t := tr.Turns[i]
			if t.Role != "assistant" {
				continue
			}
			for line := range strings.SplitSeq(t.Text, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					if len(line) > 100 {
						line = line[:100]
					}
					return line
				}
			}
		}
	}
	return "harness: " + l.a.Name
}

// identity is the git environment giving a committer when the
// repository has none configured (a daemon under a service manager
// often has no user.email): harness itself.
func identity(ctx context.Context, c *Control, dir string) []string {
	if os.Getenv("GIT_COMMITTER_EMAIL") != "" {
		return nil
	}
	if e, err := c.git(ctx, dir, "config", "user.email"); err == nil && e != "" {
		return nil
	}
	return []string{"GIT_AUTHOR_NAME=harness", "GIT_AUTHOR_EMAIL=harness@localhost",
		"GIT_COMMITTER_NAME=harness", "GIT_COMMITTER_EMAIL=harness@localhost"}
}

// remove stops nothing more (the harness was stopped), runs the
// teardown and removes the worktree. A worktree with changes made after
// the commit is kept, said in a note: the agent's work is never thrown
// away.
func (l *lander) remove(ctx context.Context) {
	c := l.c
	if _, err := os.Stat(l.wt); errors.Is(err, fs.ErrNotExist) {
		l.res.Removed = true
		return
	}
	if n := c.runTeardown(ctx, l.u, l.h); n != "" {
		l.note("%s", n)
	}
	removed, err := c.removeWorktree(ctx, l.u, l.h, false)
	if err != nil {
		l.note("worktree %s kept: %v", l.wt, err)
		return
	}
	l.res.Removed = removed
}
