package control

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/gitdiff"
)

// Review (docs/design/resources.md): `diff` is what a harness changed in
// its worktree, or in its workdir when that is a git checkout, against
// its merge base with the base. The git work runs on the caller's
// goroutine (an operation) or in the background (turn_done), never on a
// unit's actor: a big checkout takes git a while.

// Diff answers `diff`.
func (c *Control) Diff(ctx context.Context, a api.DiffArgs) (api.Diff, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.Diff{}, err
	}
	return c.diffOf(ctx, u, a.Stat)
}

// diffOf computes u's diff (only the counts with stat).
func (c *Control) diffOf(ctx context.Context, u *unit, stat bool) (api.Diff, error) {
	dir, base, err := c.diffTarget(ctx, u)
	if err != nil {
		return api.Diff{}, err
	}
	d, err := gitdiff.Compute(ctx, dir, base, gitdiff.Options{Stat: stat, Run: func(cmd *exec.Cmd) error {
		return runChild(c.opt.Reaper, cmd)
	}})
	if err != nil {
		return api.Diff{}, fmt.Errorf("harness %s: %w", u.name, err)
	}
	return d, nil
}

// diffTarget is the checkout a harness's diff is of and its base: the
// worktree and worktree.base (the repository's branch when unset), or
// the workdir and its HEAD.
func (c *Control) diffTarget(ctx context.Context, u *unit) (dir, base string, err error) {
	h := u.harness()
	if h == nil {
		return "", "", errcode.Errorf(errcode.InvalidArgument, "%s is an MCP upstream: it has no workdir to diff", u.name)
	}
	if w := h.Worktree; w != nil {
		dir = c.worktreePath(u.name)
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			return "", "", errcode.Errorf(errcode.InvalidArgument, "%s has no worktree yet: it is made before its first run (harness start %s)", u.name, u.name)
		}
		if w.Base != "" {
			return dir, w.Base, nil
		}
		// The base is what the repository had checked out when the
		// worktree was made: its branch now, by name.
		if b, err := c.git(ctx, w.Repo, "symbolic-ref", "-q", "--short", "HEAD"); err == nil && b != "" {
			return dir, b, nil
		}
		if id, err := c.git(ctx, w.Repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
			return dir, id, nil
		}
		return "", "", errcode.Errorf(errcode.InvalidArgument, "%s: repo %s has no HEAD commit to diff against; set worktree.base", u.name, w.Repo)
	}
	dir = c.agentWorkdir(u.name, h)
	if h.Workdir == "" {
		return "", "", errcode.Errorf(errcode.InvalidArgument, "%s has no worktree and no workdir: nothing to diff", u.name)
	}
	return dir, "", nil
}
