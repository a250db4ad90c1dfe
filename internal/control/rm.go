package control

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Rm answers `rm` (docs/agents.md): a harness of harness.d is stopped, its
// worktree removed (refused with changes or commits not on its base,
// unless force) and its file deleted. A harness of the person's own file
// is refused: that file is theirs to edit.
func (c *Control) Rm(ctx context.Context, a api.RmArgs) (api.RmResult, error) {
	c.newMu.Lock()
	defer c.newMu.Unlock()
	c.mu.RLock()
	file, included := c.cfg.Included[a.Name]
	_, inCfg := c.cfg.Harnesses[a.Name]
	path := c.cfg.Path
	c.mu.RUnlock()
	if !included {
		if inCfg {
			return api.RmResult{}, errcode.Errorf(errcode.InvalidArgument, "rm: %s is declared in %s, not in %s: remove it from that file yourself (harness rm leaves it alone)", a.Name, path, config.IncludeDirName)
		}
		if _, err := c.lookup(a.Name); err != nil {
			return api.RmResult{}, fmt.Errorf("rm: %w", err)
		}
		return api.RmResult{}, errcode.Errorf(errcode.InvalidArgument, "rm: %s is not a harness of %s (a project's or a scratch harness: harness down or harness stop)", a.Name, config.IncludeDirName)
	}
	u, err := c.lookup(a.Name)
	if err != nil {
		return api.RmResult{}, fmt.Errorf("rm: %w", err)
	}
	res := api.RmResult{Name: a.Name, File: file}
	h := u.harness()
	wt := ""
	if h != nil && h.Worktree != nil {
		if p := c.worktreePath(a.Name); exists(p) {
			wt = p
		}
	}
	if wt != "" && !a.Force {
		if err := c.refuseUnlanded(ctx, a.Name, wt, h.Worktree); err != nil {
			return res, err
		}
	}
	base := filepath.Base(file)
	if _, err := config.LoadWith(c.opt.ConfigPath, map[string]*config.Include{base: nil}); err != nil {
		return res, fmt.Errorf("rm %s: the configuration without it would not load: %w", a.Name, err)
	}
	if _, err := c.Stop(ctx, api.NamesArgs{Name: a.Name}); err != nil {
		return res, fmt.Errorf("rm %s: stop: %w", a.Name, err)
	}
	if wt != "" {
		if _, err := c.WorktreeRemove(ctx, api.WorktreeRemoveArgs{Name: a.Name, Force: a.Force}); err != nil {
			return res, fmt.Errorf("rm %s: %w", a.Name, err)
		}
		res.Worktree = wt
	}
	if err := os.Remove(file); err != nil && !missing(err) {
		return res, fmt.Errorf("rm %s: %w", a.Name, err)
	}
	if _, err := c.Reload(ctx, api.NoArgs{}); err != nil {
		return res, fmt.Errorf("rm %s: removed %s, but the reload failed: %w", a.Name, file, err)
	}
	c.releasePorts(a.Name)
	c.log.Info("harness removed", logkey.Unit, a.Name, logkey.File, file)
	return res, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// refuseUnlanded refuses to remove a worktree with uncommitted changes
// (naming the files) or commits its base does not have.
func (c *Control) refuseUnlanded(ctx context.Context, name, wt string, w *config.Worktree) error {
	st, err := c.git(ctx, wt, "status", "--porcelain")
	if err != nil {
		return fmt.Errorf("rm %s: worktree status: %v: %w", name, err, errcode.ErrInternal)
	}
	if st != "" {
		var files []string
		for _, l := range strings.Split(st, "\n") {
			if len(l) > 3 {
				files = append(files, l[3:])
			}
		}
		return errcode.Errorf(errcode.InvalidArgument, "rm %s: its worktree %s has uncommitted changes: %s; land them, or --force removes them", name, wt, strings.Join(files, ", "))
	}
	base := w.Base
	if base == "" {
		base = "HEAD"
	}
	tip, err := c.git(ctx, w.Repo, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return nil // no base to compare with: nothing to lose that git knows of
	}
	out, err := c.git(ctx, wt, "rev-list", "--count", tip+"..HEAD")
	if err == nil && out != "0" {
		return errcode.Errorf(errcode.InvalidArgument, "rm %s: its branch has %s commit(s) not on %s; land them, or --force removes the worktree (the branch stays)", name, out, base)
	}
	return nil
}

// versionTimeout bounds one `PROGRAM --version`.
const versionTimeout = 5 * time.Second

// Agents answers `agents`: each agent harness can run, its program looked
// up on the daemon's PATH and asked its version (no shell, bounded).
func (c *Control) Agents(ctx context.Context, _ api.AgentsArgs) ([]api.AgentProgram, error) {
	names := knownAgents()
	out := make([]api.AgentProgram, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		ad := agent.MustLookup(n)
		p := api.AgentProgram{Agent: n}
		prog, err := c.agentProgram(ad)
		if err != nil {
			p.Error = err.Error()
			out[i] = p
			continue
		}
		p.Program = prog
		if n == agent.Demo {
			p.Path, p.Found, p.Version = prog, true, c.opt.Version
			out[i] = p
			continue
		}
		path, err := exec.LookPath(prog)
		if err != nil {
			out[i] = p
			continue
		}
		p.Path, p.Found = path, true
		wg.Add(1)
		go func(i int, p api.AgentProgram) {
			defer wg.Done()
			p.Version, p.Error = c.version(ctx, p.Path)
			out[i] = p
		}(i, p)
	}
	wg.Wait()
	return out, nil
}

// version is the first line a program prints for --version.
func (c *Control) version(ctx context.Context, path string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.WaitDelay = time.Second
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := runChild(c.opt.Reaper, cmd)
	if ctx.Err() != nil {
		return "", fmt.Sprintf("--version did not answer within %s", versionTimeout)
	}
	if err != nil {
		return "", fmt.Sprintf("--version: %v", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if len(first) > 200 {
		first = first[:200]
	}
	return first, ""
}
