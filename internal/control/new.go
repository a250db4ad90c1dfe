package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/agent"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// New answers `new` (docs/agents.md): it writes harness.d/NAME.toml
// beside the config file, the TOML a person would write, once the whole
// configuration with it passes the checks a reload makes; then reloads
// and, unless no_start, starts it. Bad input writes nothing.
func (c *Control) New(ctx context.Context, a api.NewArgs) (api.NewResult, error) {
	c.newMu.Lock()
	defer c.newMu.Unlock()
	text, err := c.newHarnessTOML(ctx, a)
	if err != nil {
		return api.NewResult{}, err
	}
	file := config.IncludeFile(c.opt.ConfigPath, a.Name)
	base := filepath.Base(file)
	cfg, err := config.LoadWith(c.opt.ConfigPath, map[string]*config.Include{base: {Name: base, Path: file, Data: text}})
	if err != nil {
		return api.NewResult{}, fmt.Errorf("new %s: the configuration with it would not load: %w", a.Name, err)
	}
	if err := writeAtomic(file, text); err != nil {
		return api.NewResult{}, fmt.Errorf("new %s: %w", a.Name, err)
	}
	if _, err := c.Reload(ctx, api.NoArgs{}); err != nil {
		// Checked above; a config file changed in between. Take it back.
		_ = os.Remove(file)
		return api.NewResult{}, fmt.Errorf("new %s: reload: %w", a.Name, err)
	}
	c.log.Info("harness written", logkey.Unit, a.Name, logkey.File, file)
	res := api.NewResult{Name: a.Name, File: file, State: "stopped", Warnings: warningsOf(cfg.Warnings, base)}
	if a.NoStart {
		return res, nil
	}
	ar, err := c.Start(ctx, api.NamesArgs{Name: a.Name})
	if err != nil {
		return res, fmt.Errorf("new %s: written to %s, but not started: %w", a.Name, file, err)
	}
	for _, it := range ar.Results {
		res.State = it.State
		if it.Error != "" {
			return res, fmt.Errorf("new %s: written to %s, but not started: %s: %w", a.Name, file, it.Error, errcode.ErrConfigInvalid)
		}
	}
	res.Started = true
	return res, nil
}

// warningsOf keeps the warnings of one included file.
func warningsOf(ws []string, base string) []string {
	out := []string{}
	for _, w := range ws {
		if strings.HasPrefix(w, config.IncludeDirName+"/"+base+":") {
			out = append(out, w)
		}
	}
	return out
}

// newHarnessTOML checks new's arguments against the fleet, the disk and
// PATH, and renders the harness's table.
func (c *Control) newHarnessTOML(ctx context.Context, a api.NewArgs) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, errcode.Errorf(errcode.InvalidArgument, "new: "+format, args...)
	}
	if a.Name == "" {
		return bad("a name is required")
	}
	if !config.ValidHarnessName(a.Name) {
		return bad("invalid harness name %s: use letters, digits, \"-\" and \"_\"", errcode.Quote(a.Name))
	}
	if c.opt.ConfigPath == "" {
		return bad("the daemon has no config file path, so no harness.d to write to")
	}
	c.mu.RLock()
	_, inCfg := c.cfg.Harnesses[a.Name]
	_, isUnit := c.units[a.Name]
	c.mu.RUnlock()
	file := config.IncludeFile(c.opt.ConfigPath, a.Name)
	if _, err := os.Lstat(file); err == nil {
		return bad("%s exists; harness rm %s removes it", file, a.Name)
	}
	if inCfg || isUnit {
		return bad("a harness named %s exists", a.Name)
	}
	cmd, args, err := c.newProgram(a)
	if err != nil {
		return nil, err
	}
	if a.Prompt != "" && a.PromptFile != "" {
		return bad("give a prompt or a prompt file, not both")
	}
	if a.PromptFile != "" {
		if !filepath.IsAbs(a.PromptFile) {
			return bad("prompt_file %s is not an absolute path", a.PromptFile)
		}
		if fi, err := os.Stat(a.PromptFile); err != nil || fi.IsDir() {
			return bad("prompt file %s cannot be read (%v)", a.PromptFile, errOrDir(err))
		}
	}
	repo, err := c.newRepo(ctx, a)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `harness new` on %s; `harness rm %s` removes it.\n", time.Now().UTC().Format(time.DateOnly), a.Name)
	fmt.Fprintf(&b, "[harness.%s]\n", a.Name)
	fmt.Fprintf(&b, "cmd = %s\n", tomlString(cmd))
	if len(args) > 0 {
		q := make([]string, len(args))
		for i, s := range args {
			q[i] = tomlString(s)
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(q, ", "))
	}
	if a.Agent != "" {
		fmt.Fprintf(&b, "agent = %s\n", tomlString(a.Agent))
	}
	line := func(key, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s = %s\n", key, tomlString(v))
		}
	}
	line("prompt", a.Prompt)
	line("prompt_file", a.PromptFile)
	line("model", a.Model)
	line("approval", a.Approval)
	switch {
	case a.Worktree:
		fmt.Fprintf(&b, "worktree = { repo = %s", tomlString(repo))
		if a.Base != "" {
			fmt.Fprintf(&b, ", base = %s", tomlString(a.Base))
		}
		b.WriteString(" }\n")
	case repo != "":
		line("workdir", repo)
	default:
		line("workdir", a.Workdir)
	}
	return []byte(b.String()), nil
}

func errOrDir(err error) error {
	if err == nil {
		return errors.New("a directory")
	}
	return err
}

// newProgram is the command and arguments of a new harness: the agent's
// program, or the command given. Unless no_start, it must be on PATH
// (the daemon's: it starts it).
func (c *Control) newProgram(a api.NewArgs) (string, []string, error) {
	bad := func(format string, args ...any) (string, []string, error) {
		return "", nil, errcode.Errorf(errcode.InvalidArgument, "new: "+format, args...)
	}
	if (a.Agent == "") == (a.Cmd == "") {
		return bad("give an agent or a command (harness new NAME --agent A, or harness new NAME -- CMD ARGS…), one of them")
	}
	cmd, args := a.Cmd, a.Args
	if a.Agent != "" {
		ad, ok := agent.Lookup(a.Agent)
		if !ok || a.Agent == agent.Generic {
			return bad("unknown agent %s (want one of %s)", errcode.Quote(a.Agent), strings.Join(knownAgents(), ", "))
		}
		var err error
		if cmd, err = c.agentProgram(ad); err != nil {
			return bad("%v", err)
		}
		if ad.Name == agent.Demo {
			args = append([]string{"demo-agent"}, args...)
		}
	}
	if !a.NoStart {
		if _, err := exec.LookPath(cmd); err != nil {
			return bad("program %s is not on the daemon's PATH (%v); install it, or pass --no-start to write the harness anyway", errcode.Quote(cmd), err)
		}
	}
	return cmd, args, nil
}

// knownAgents are the agents new takes.
func knownAgents() []string {
	var out []string
	for _, n := range agent.Names() {
		if n != agent.Generic {
			out = append(out, n)
		}
	}
	return out
}

// agentProgram is the program a harness of ad runs: its first command
// name, or this binary for the demo agent.
func (c *Control) agentProgram(ad *agent.Adapter) (string, error) {
	if ad.Name == agent.Demo {
		if c.opt.Exe == "" {
			return "", errors.New("the demo agent is this binary, and the daemon does not know its path")
		}
		return c.opt.Exe, nil
	}
	if len(ad.Commands) == 0 {
		return "", fmt.Errorf("agent %s has no program to run", ad.Name)
	}
	return ad.Commands[0], nil
}

// newRepo checks repo, worktree and base: the repository (a project's
// directory for project) is a git repository, and base one of its
// commits. It answers the repository ("" for none).
func (c *Control) newRepo(ctx context.Context, a api.NewArgs) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", errcode.Errorf(errcode.InvalidArgument, "new: "+format, args...)
	}
	repo := a.Repo
	if a.Project != "" {
		if repo != "" {
			return bad("give a repo or a project, not both")
		}
		c.mu.RLock()
		p, ok := c.projects[a.Project]
		c.mu.RUnlock()
		if !ok {
			return bad("no project named %s is up (harness up)", errcode.Quote(a.Project))
		}
		repo = p.Root
	}
	if repo != "" && a.Workdir != "" {
		return bad("give a repo or a workdir, not both")
	}
	if a.Workdir != "" && !filepath.IsAbs(a.Workdir) {
		return bad("workdir %s is not an absolute path", a.Workdir)
	}
	if a.Base != "" && !a.Worktree {
		return bad("base goes with worktree")
	}
	if repo == "" {
		if a.Worktree {
			return bad("worktree needs a repo: the repository to take a worktree of")
		}
		return "", nil
	}
	if !filepath.IsAbs(repo) {
		return bad("repo %s is not an absolute path", repo)
	}
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return bad("repo %s is not a directory (%v)", repo, errOrDir(err))
	}
	if _, err := c.git(ctx, repo, "rev-parse", "--git-dir"); err != nil {
		return bad("repo %s is not a git repository (%v)", repo, err)
	}
	if a.Base != "" {
		if strings.HasPrefix(a.Base, "-") {
			return bad("base %s is not a commit or branch", errcode.Quote(a.Base))
		}
		if _, err := c.git(ctx, repo, "rev-parse", "--verify", "--quiet", a.Base+"^{commit}"); err != nil {
			return bad("base %s is not a commit or branch of %s", errcode.Quote(a.Base), repo)
		}
	}
	return repo, nil
}

// tomlString quotes s as a TOML basic string: JSON's escapes are TOML's,
// but for DEL, which TOML wants escaped too.
func tomlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), "\x7f", `\u007f`)
}

// writeAtomic writes data to path through a temporary file in the same
// directory (named with a leading dot, which the include skips) and a
// rename, private to the daemon's user.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone already once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// missing reports whether err is a file's absence.
func missing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
