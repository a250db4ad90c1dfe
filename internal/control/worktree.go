package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/proctree"
	"github.com/harness-dev/harness/internal/runs"
)

// Workspaces (docs/design/resources.md): a harness with worktree runs in a git worktree
// of its own, <state>/worktrees/<name>, on its own branch. The worktree is
// made before the first run, by whoever starts the unit (an operation,
// boot, a schedule), never on the unit's actor: git can take seconds. It
// stays across runs, restarts and daemon restarts until `harness worktree
// remove`.

// gitTimeout bounds one git command.
const gitTimeout = 2 * time.Minute

// startUnit starts u after making its worktree, if it needs one.
func (c *Control) startUnit(ctx context.Context, u *unit, cause runs.Cause) error {
	if err := c.ensureWorktree(ctx, u); err != nil {
		return err
	}
	return u.sup.Start(ctx, cause)
}

// restartUnit restarts u after making its worktree, if it needs one.
func (c *Control) restartUnit(ctx context.Context, u *unit, cause runs.Cause) error {
	if err := refuseScratchRestart(u); err != nil {
		return err
	}
	if err := c.ensureWorktree(ctx, u); err != nil {
		return err
	}
	return u.sup.Restart(ctx, cause)
}

// restartFresh is restartUnit starting a new conversation (restart
// --fresh, docs/design/agents.md).
func (c *Control) restartFresh(ctx context.Context, u *unit, cause runs.Cause) error {
	if err := refuseScratchRestart(u); err != nil {
		return err
	}
	if err := c.ensureWorktree(ctx, u); err != nil {
		return err
	}
	return u.sup.RestartFresh(ctx, cause)
}

// worktreePath is where the worktree of unit name lives.
func (c *Control) worktreePath(name string) string {
	return filepath.Join(c.opt.Paths.StateDir, "worktrees", logs.EscapeUnit(name))
}

// ensureWorktree makes u's worktree unless it exists, with the
// repository's included files, and runs its setup unless it has run
// (bootstrap.go). Errors making it are config_invalid naming the harness
// and what is wrong, and leave nothing behind: no directory, no worktree
// entry, no branch made for it.
func (c *Control) ensureWorktree(ctx context.Context, u *unit) error {
	h := u.harness()
	if h == nil || h.Worktree == nil {
		return nil
	}
	if err := c.makeWorktree(ctx, u, h); err != nil {
		return err
	}
	return c.runSetup(ctx, u, h)
}

// makeWorktree is ensureWorktree's git part.
func (c *Control) makeWorktree(ctx context.Context, u *unit, h *config.Harness) error {
	c.worktreeMu.Lock()
	defer c.worktreeMu.Unlock()
	path := c.worktreePath(u.name)
	if _, err := os.Stat(filepath.Join(path, ".git")); err == nil {
		return nil
	}
	// A new worktree runs its setup again.
	c.forgetSetup(u.name)
	w := h.Worktree
	branch := w.BranchFor(u.name)
	fail := func(format string, a ...any) error {
		return errcode.Errorf(errcode.ConfigInvalid, "%s: worktree: %s", u.name, fmt.Sprintf(format, a...))
	}
	if _, err := c.git(ctx, w.Repo, "rev-parse", "--git-dir"); err != nil {
		return fail("repo %s is not a git repository (%v)", w.Repo, err)
	}
	base := w.Base
	if base == "" {
		base = "HEAD"
	}
	if _, err := c.git(ctx, w.Repo, "rev-parse", "--verify", "--quiet", base+"^{commit}"); err != nil {
		return fail("base %q is not a commit or branch of %s", base, w.Repo)
	}
	// A base checked out with uncommitted changes: the worktree would
	// start without them, which is never what was meant.
	if cur, err := c.git(ctx, w.Repo, "rev-parse", "--abbrev-ref", "HEAD"); err == nil && (w.Base == "" || w.Base == cur) {
		if st, err := c.git(ctx, w.Repo, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			return fail("base %q has uncommitted changes in %s; commit or stash them, or set worktree.base", base, w.Repo)
		}
	}
	exists := false
	if _, err := c.git(ctx, w.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		exists = true
		if at := c.checkedOutAt(ctx, w.Repo, branch); at != "" {
			return fail("branch %q is already checked out at %s; set worktree.branch, or remove that worktree", branch, at)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%s: worktree: %w", u.name, err)
	}
	if _, err := os.Stat(path); err == nil {
		return fail("%s exists but is not a worktree; remove it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: worktree: %w", u.name, err)
	}
	args := []string{"worktree", "add", "--quiet"}
	if exists {
		args = append(args, path, branch)
	} else {
		args = append(args, "-b", branch, path, base)
	}
	if _, err := c.git(ctx, w.Repo, args...); err != nil {
		// git removes what it made on most failures; be sure.
		_ = os.RemoveAll(path)
		_, _ = c.git(context.Background(), w.Repo, "worktree", "prune")
		if !exists {
			_, _ = c.git(context.Background(), w.Repo, "branch", "-D", branch)
		}
		return fail("git worktree add: %v", err)
	}
	c.log.Info("worktree created", logkey.Unit, u.name, logkey.Path, path)
	// Where the branch stood when the worktree was made: a land says so
	// when the branch no longer has it (rewritten under the agent).
	if start, err := c.git(ctx, path, "rev-parse", "HEAD"); err == nil {
		_ = os.WriteFile(path+".start", []byte(start+"\n"), 0o600)
	}
	c.copyIncluded(ctx, u.name, w.Repo, path)
	return nil
}

// checkedOutAt is the worktree where branch is checked out, "" if none.
func (c *Control) checkedOutAt(ctx context.Context, repo, branch string) string {
	out, err := c.git(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return ""
	}
	at := ""
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			at = p
		}
		if line == "branch refs/heads/"+branch {
			return at
		}
	}
	return ""
}

// git runs git in dir and returns its trimmed output; an error carries
// git's own message. It is started through the orphan reaper, so its exit
// status is Wait's (a failure taken for "no such branch" may end in
// `git branch -D` of a branch that exists).
func (c *Control) git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := c.gitInput(ctx, dir, nil, args...)
	if err != nil {
		return "", err
	}
	return out, nil
}

// gitInput is git with stdin; on failure it returns what git printed on stdout too (merge-tree lists
// conflicts there).
func (c *Control) gitInput(ctx context.Context, dir string, stdin io.Reader, args ...string) (string, error) {
	return c.gitEnv(ctx, dir, stdin, nil, args...)
}

// gitEnv is gitInput with env (KEY=VALUE) after the daemon's: a scratch
// index, a committer when the repository has none.
func (c *Control) gitEnv(ctx context.Context, dir string, stdin io.Reader, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), env...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := runChild(c.opt.Reaper, cmd); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return strings.TrimSpace(out.String()), errors.New(msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// runChild is cmd.Run through r (when not nil): registered from its start
// until its Wait returned.
func runChild(r *proctree.Reaper, cmd *exec.Cmd) error {
	if r == nil {
		return cmd.Run()
	}
	pid, err := r.Spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return err
	}
	defer r.Release(pid)
	return cmd.Wait()
}

// worktreeView is a harness's worktree as describe shows it.
func (c *Control) worktreeView(name string, w *config.Worktree) *api.WorktreeView {
	if w == nil {
		return nil
	}
	v := &api.WorktreeView{Repo: w.Repo, Base: w.Base, Branch: w.BranchFor(name), Path: c.worktreePath(name)}
	if _, err := os.Stat(filepath.Join(v.Path, ".git")); err == nil {
		v.Created = true
	}
	if b, err := os.ReadFile(c.setupMarker(name) + "-failed"); err == nil {
		v.SetupFailed = string(b)
	}
	return v
}

// WorktreeRemove answers `worktree_remove`: the harness must not run; a
// worktree with changes (tracked or untracked) is refused unless force.
// The branch stays in the repository.
func (c *Control) WorktreeRemove(ctx context.Context, a api.WorktreeRemoveArgs) (api.WorktreeRemoveResult, error) {
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.WorktreeRemoveResult{}, err
	}
	h := u.harness()
	if h == nil || h.Worktree == nil {
		return api.WorktreeRemoveResult{}, errcode.Errorf(errcode.InvalidArgument, "%s has no worktree", a.Name)
	}
	if st := u.sup.Status(); isActive(st.State) || st.HasRun() {
		return api.WorktreeRemoveResult{}, errcode.Errorf(errcode.InvalidArgument, "%s is %s: stop it before removing its worktree", a.Name, st.State)
	}
	path := c.worktreePath(u.name)
	res := api.WorktreeRemoveResult{Name: a.Name, Path: path, Branch: h.Worktree.BranchFor(u.name)}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if !a.Force {
		// Teardown runs only for a removal that will happen.
		if st, err := c.git(ctx, path, "status", "--porcelain"); err == nil && st != "" {
			n := len(strings.Split(st, "\n"))
			return res, errcode.Errorf(errcode.InvalidArgument, "worktree %s of %s has uncommitted changes (%d paths); --force removes them", path, a.Name, n)
		}
	}
	c.runTeardown(ctx, u, h)
	removed, err := c.removeWorktree(ctx, u, h, a.Force)
	res.Removed = removed
	return res, err
}
