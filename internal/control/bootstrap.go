package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/proctree"
)

// A worktree that works on its first run (docs/worktrees.md): the
// repository's ignored files named in .worktreeinclude are copied into a
// new worktree, setup runs in it once before the first run, teardown
// before it is removed. All of it runs on the caller's goroutine (the
// operation that starts or lands the harness), never on a unit's actor.

// Bounds of the bootstrap commands: a setup may install dependencies, a
// teardown only tidies up.
const (
	setupTimeout    = 10 * time.Minute
	teardownTimeout = 2 * time.Minute
	// setupTailLines is how many of a failed setup's last lines its
	// error and run record carry.
	setupTailLines = 10
	// maxCommandOutput bounds what is kept of a command's output.
	maxCommandOutput = 256 << 10
)

// worktreeIncludeFile names, in a repository's top directory, the
// ignored files a new worktree gets a copy of (gitignore syntax).
const worktreeIncludeFile = ".worktreeinclude"

// unitLock is the lock of one harness's worktree work that may take long
// (setup, land), so that one harness's npm install holds up nobody else.
func (c *Control) unitLock(name string) *sync.Mutex {
	m, _ := c.wtLocks.LoadOrStore(name, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// setupMarker is the file saying name's setup has run in its worktree.
func (c *Control) setupMarker(name string) string {
	return c.worktreePath(name) + ".setup-done"
}

// copyIncluded copies into the new worktree wt the files of repo that
// .worktreeinclude names and git ignores. git lists them (never a matcher
// of our own): ls-files gives the untracked files the include patterns
// match, check-ignore keeps those the repository ignores. Modes are kept;
// a symlink is copied as a link only when it points inside the
// repository. A file that cannot be copied is logged and skipped.
func (c *Control) copyIncluded(ctx context.Context, name, repo, wt string) {
	top, err := c.git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return
	}
	include := filepath.Join(top, worktreeIncludeFile)
	if _, err := os.Lstat(include); err != nil {
		return
	}
	listed, err := c.git(ctx, top, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+include)
	if err != nil || listed == "" {
		if err != nil {
			c.log.Warn("worktree include: list", logkey.Unit, name, logkey.Err, err)
		}
		return
	}
	ignored, err := c.gitInput(ctx, top, strings.NewReader(listed+"\x00"), "check-ignore", "-z", "--stdin")
	if err != nil && ignored == "" {
		// check-ignore exits 1 when nothing is ignored.
		return
	}
	copied := 0
	for _, rel := range strings.Split(ignored, "\x00") {
		if rel == "" || !filepath.IsLocal(rel) {
			continue
		}
		if err := copyInto(top, wt, rel); err != nil {
			c.log.Warn("worktree include: copy", logkey.Unit, name, logkey.Path, rel, logkey.Err, err)
			continue
		}
		copied++
	}
	if copied > 0 {
		c.log.Info("worktree include: copied", logkey.Unit, name, logkey.Count, copied)
	}
}

// copyInto copies top/rel to wt/rel, never over a file that is there.
func copyInto(top, wt, rel string) error {
	src, dst := filepath.Join(top, rel), filepath.Join(wt, rel)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		abs := target
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(filepath.Dir(src), target)
		}
		if r, err := filepath.Rel(top, filepath.Clean(abs)); err != nil || !filepath.IsLocal(r) {
			return fmt.Errorf("symlink to %s points out of the repository", target)
		}
		return os.Symlink(target, dst)
	case fi.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		return os.Chmod(dst, fi.Mode().Perm()) // umask took bits off
	}
	return fmt.Errorf("not a regular file or symlink")
}

// runSetup runs h's setup in name's worktree unless it has run there.
// Its output goes to the harness's log; a failure is recorded as a run
// with outcome setup_failed and fails the start with its last lines. The
// worktree stays, and the next start runs setup again.
func (c *Control) runSetup(ctx context.Context, u *unit, h *config.Harness) error {
	if len(h.Bootstrap.Setup) == 0 {
		return nil
	}
	mu := c.unitLock(u.name)
	mu.Lock()
	defer mu.Unlock()
	marker := c.setupMarker(u.name)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	tail, err := c.bootstrapCommand(ctx, u, h, "setup", h.Bootstrap.Setup, setupTimeout)
	if err != nil {
		note := fmt.Sprintf("setup %s: %v", h.Bootstrap.Setup[0], err)
		if tail != "" {
			note += "; last lines:\n" + tail
		}
		// A run that never spawned, so the history shows the failure.
		if _, err := c.opt.Runs.Record(u.name, api.CauseManual, api.RunSetupFailed, note); err != nil {
			c.log.Error("record setup failure", logkey.Unit, u.name, logkey.Err, err)
		}
		if err := os.WriteFile(marker+"-failed", []byte(note), 0o600); err != nil {
			c.log.Warn("setup: failure note", logkey.Unit, u.name, logkey.Err, err)
		}
		return errcode.ErrSetupFailed.Errorf("%s: %s", u.name, note)
	}
	_ = os.Remove(marker + "-failed")
	if err := os.WriteFile(marker, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		c.log.Warn("setup: marker", logkey.Unit, u.name, logkey.Err, err)
	}
	return nil
}

// runTeardown runs h's teardown in name's worktree, bounded; a failure is
// logged and returned as a note, never an error: the removal goes on.
func (c *Control) runTeardown(ctx context.Context, u *unit, h *config.Harness) string {
	if len(h.Bootstrap.Teardown) == 0 {
		return ""
	}
	if _, err := os.Stat(c.worktreePath(u.name)); err != nil {
		return ""
	}
	tail, err := c.bootstrapCommand(ctx, u, h, "teardown", h.Bootstrap.Teardown, teardownTimeout)
	if err == nil {
		return ""
	}
	c.log.Warn("teardown failed", logkey.Unit, u.name, logkey.Err, err)
	note := fmt.Sprintf("teardown %s: %v", h.Bootstrap.Teardown[0], err)
	if tail != "" {
		note += " (" + lastLine(tail) + ")"
	}
	return note
}

// bootstrapCommand runs argv (no shell) in u's worktree with the
// harness's env, its name and ports, bounded by timeout. Its output
// becomes the harness's log lines; the last lines are returned.
func (c *Control) bootstrapCommand(ctx context.Context, u *unit, h *config.Harness, what string, argv []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir := c.worktreePath(u.name)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	env := os.Environ()
	keys := make([]string, 0, len(h.Env))
	for k := range h.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+h.Env[k])
	}
	env = append(env, "HARNESS_NAME="+u.name)
	env = append(env, c.portEnv(u.name, h.Bootstrap.Ports)...)
	cmd.Env = env
	cmd.SysProcAttr = proctree.SysProcAttr()
	// The whole group goes at the timeout: a setup's children too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run := u.sup.Status().RunID
	u.log.Event(run, fmt.Sprintf("%s: %s", what, strings.Join(argv, " ")))
	start := time.Now()
	err := runChild(c.opt.Reaper, cmd)
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	u.log.Output(lines...)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("timed out after %s", timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("exited with %s", ee.ProcessState)
		}
	}
	if err != nil {
		u.log.Event(run, fmt.Sprintf("%s failed: %v", what, err))
	} else {
		u.log.Event(run, fmt.Sprintf("%s done in %s", what, time.Since(start).Round(time.Millisecond)))
	}
	if len(lines) > setupTailLines {
		lines = lines[len(lines)-setupTailLines:]
	}
	return c.opt.Masker.String(logs.StripControlLines(strings.Join(lines, "\n"))), err
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// tailBuffer keeps the last maxCommandOutput bytes written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - maxCommandOutput; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// forgetSetup forgets that name's setup ran or failed: its worktree is
// gone or new.
func (c *Control) forgetSetup(name string) {
	m := c.setupMarker(name)
	_ = os.Remove(m)
	_ = os.Remove(m + "-failed")
	_ = os.Remove(c.worktreePath(name) + ".start")
}
