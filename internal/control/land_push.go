package control

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/proctree"
)

// prTimeout bounds pr_command.
const prTimeout = 2 * time.Minute

// remote is the remote a branch is pushed to: the branch's own upstream
// remote, else origin, else the repository's only remote.
func (l *lander) remote(ctx context.Context) (string, error) {
	c := l.c
	if r, err := c.git(ctx, l.repo, "config", "branch."+l.branch+".remote"); err == nil && r != "" && r != "." {
		return r, nil
	}
	out, _ := c.git(ctx, l.repo, "remote")
	var remotes []string
	for r := range strings.FieldsSeq(out) {
		remotes = append(remotes, r)
	}
	switch {
	case slices.Contains(remotes, "origin"):
		return "origin", nil
	case len(remotes) == 1:
		return remotes[0], nil
	case len(remotes) == 0:
		return "", errcode.Errorf(errcode.InvalidArgument, "%s: %s has no remote to push to: add one (git -C %s remote add origin URL), or land without --push", l.a.Name, l.repo, l.repo)
	}
	return "", errcode.Errorf(errcode.InvalidArgument, "%s: %s has remotes %s and none is origin: set the branch's (git -C %s config branch.%s.remote NAME)", l.a.Name, l.repo, strings.Join(remotes, ", "), l.repo, l.branch)
}

// push pushes the branch to the remote and, with pr, opens a pull
// request. A refused push changes nothing here: the branch, the worktree
// and the harness's files all stay.
func (l *lander) push(ctx context.Context) error {
	c, a := l.c, l.a
	l.res.Mode = api.LandPush
	l.j.Mode = api.LandPush
	head, err := c.git(ctx, l.repo, "rev-parse", "refs/heads/"+l.branch)
	if err != nil {
		return fmt.Errorf("%s: land: branch %s: %v: %w", a.Name, l.branch, err, errcode.ErrInternal)
	}
	l.res.Commit = head
	l.noteRewritten(ctx, head)
	if l.j.Step != stepPushed && l.j.Step != stepRemoving {
		if _, err := c.git(ctx, l.repo, "push", "--quiet", l.j.Remote, "refs/heads/"+l.branch+":refs/heads/"+l.branch); err != nil {
			// git's message may echo the remote's URL, credentials and all.
			return errcode.Errorf(errcode.InvalidArgument, "%s: pushing %s to %s failed: %s; nothing was removed", a.Name, l.branch, l.j.Remote, c.opt.Masker.String(err.Error()))
		}
		l.j.Commit, l.j.Step = head, stepPushed
		l.save()
	}
	l.res.Pushed = true
	if !a.PR {
		return nil
	}
	if l.j.PRURL != "" {
		l.res.PRURL = l.j.PRURL
		return nil
	}
	url, err := l.openPR(ctx)
	if err != nil {
		return errcode.Errorf(errcode.InvalidArgument, "%s: the branch %s is pushed, but the pull request failed: %v; nothing was removed", a.Name, l.branch, err)
	}
	l.res.PRURL, l.j.PRURL = url, url
	l.save()
	return nil
}

// openPR runs pr_command ({branch}, {base} and {remote} in its arguments
// replaced) in the worktree and answers the URL it printed last.
func (l *lander) openPR(ctx context.Context) (string, error) {
	argv := l.h.Bootstrap.PRCommand
	if len(argv) == 0 {
		if _, err := exec.LookPath("gh"); err != nil {
			return "", errors.New("no pr_command is set and gh is not on PATH")
		}
		argv = []string{"gh", "pr", "create", "--fill", "--head", "{branch}"}
	}
	r := strings.NewReplacer("{branch}", l.branch, "{base}", l.res.Base, "{remote}", l.j.Remote)
	args := make([]string, len(argv))
	for i, s := range argv {
		args[i] = r.Replace(s)
	}
	ctx, cancel := context.WithTimeout(ctx, prTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = l.wt
	if _, err := os.Stat(l.wt); err != nil {
		cmd.Dir = l.repo
	}
	cmd.SysProcAttr = proctree.SysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := runChild(l.c.opt.Reaper, cmd)
	text := l.c.opt.Masker.String(strings.TrimSpace(out.String()))
	if err != nil {
		if text != "" {
			return "", fmt.Errorf("%s: %v: %s", args[0], err, lastLine(text))
		}
		return "", fmt.Errorf("%s: %v", args[0], err)
	}
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if f := strings.Fields(lines[i]); len(f) > 0 {
			for _, w := range f {
				if strings.HasPrefix(w, "https://") || strings.HasPrefix(w, "http://") {
					return w, nil
				}
			}
		}
	}
	if text == "" {
		return "", nil
	}
	return lastLine(text), nil
}

// removeWorktree removes name's worktree (the harness is stopped) and
// forgets that its setup ran; false when there was none. Without force a
// worktree with changes is refused.
func (c *Control) removeWorktree(ctx context.Context, u *unit, h *config.Harness, force bool) (bool, error) {
	c.worktreeMu.Lock()
	defer c.worktreeMu.Unlock()
	path := c.worktreePath(u.name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		c.forgetSetup(u.name)
		return false, nil
	}
	if !force {
		st, err := c.git(ctx, path, "status", "--porcelain")
		if err != nil {
			return false, fmt.Errorf("%s: worktree: status: %v: %w", u.name, err, errcode.ErrInternal)
		}
		if st != "" {
			n := len(strings.Split(st, "\n"))
			return false, errcode.Errorf(errcode.InvalidArgument, "worktree %s of %s has uncommitted changes (%d paths); --force removes them", path, u.name, n)
		}
	}
	args := []string{"worktree", "remove", path}
	if force {
		args = []string{"worktree", "remove", "--force", path}
	}
	if _, err := c.git(ctx, h.Worktree.Repo, args...); err != nil {
		return false, fmt.Errorf("%s: worktree remove: %v: %w", u.name, err, errcode.ErrInternal)
	}
	c.forgetSetup(u.name)
	c.log.Info("worktree removed", logkey.Unit, u.name, logkey.Path, path)
	return true, nil
}
