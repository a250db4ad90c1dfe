// Package gitdiff answers what changed in a git checkout against a base
// (docs/design/resources.md): committed, staged, unstaged and untracked
// files, ignored ones left out, with the real git program.
//
// Untracked files are taken in without touching the person's index: git
// runs on a copy of it (GIT_INDEX_FILE) into which `git add -A` puts the
// worktree as it is, and `git diff --cached MERGE_BASE` compares that to
// the merge base. The only thing written to the repository is the blobs
// of files not yet in it, which git collects as garbage later.
package gitdiff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// Runner runs cmd to its end (Start and Wait). The daemon's registers the
// child with its orphan reaper, whose wait would otherwise take its exit
// status.
type Runner func(cmd *exec.Cmd) error

// Options say how a diff is computed.
type Options struct {
	// Run runs each git command; nil is (*exec.Cmd).Run.
	Run Runner
	// Stat leaves the hunks out (no patch is read).
	Stat bool
	// MaxBytes bounds the patch text read; 0 is api.MaxDiffBytes.
	MaxBytes int
	// Timeout bounds each git command; 0 is DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds one git command.
const DefaultTimeout = 2 * time.Minute

// Compute is the diff of the checkout at dir against its merge base with
// base ("" is HEAD: the uncommitted changes). A dir that is not a git
// checkout, or a base that is no commit, is invalid_argument saying so.
func Compute(ctx context.Context, dir, base string, opt Options) (api.Diff, error) {
	g := &git{dir: dir, opt: opt}
	if g.opt.Run == nil {
		g.opt.Run = (*exec.Cmd).Run
	}
	if g.opt.MaxBytes <= 0 {
		g.opt.MaxBytes = api.MaxDiffBytes
	}
	if g.opt.Timeout <= 0 {
		g.opt.Timeout = DefaultTimeout
	}
	top, err := g.out(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return api.Diff{}, errcode.Errorf(errcode.InvalidArgument, "%s is not a git checkout (%v)", dir, err)
	}
	g.dir = top
	head, err := g.out(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return api.Diff{}, errcode.Errorf(errcode.InvalidArgument, "%s has no commit yet", top)
	}
	ref := base
	if ref == "" {
		ref = "HEAD"
	}
	if strings.HasPrefix(ref, "-") {
		return api.Diff{}, errcode.Errorf(errcode.InvalidArgument, "base %q is not a commit (it starts with \"-\")", ref)
	}
	baseID, err := g.out(ctx, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return api.Diff{}, errcode.Errorf(errcode.InvalidArgument, "base %q is not a commit of %s", ref, top)
	}
	mb, err := g.out(ctx, nil, "merge-base", baseID, head)
	if err != nil {
		mb = baseID // no common history: against the base itself
	}
	d := api.Diff{Base: mb, Head: head, BaseRef: ref, Files: []api.DiffFile{}}

	tmp, err := os.MkdirTemp("", "harness-diff-")
	if err != nil {
		return d, fmt.Errorf("diff: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if err := g.copyIndex(ctx, filepath.Join(tmp, "index")); err != nil {
		if _, err := g.out(ctx, env, "read-tree", head); err != nil {
			return d, fmt.Errorf("diff: git read-tree: %v: %w", err, errcode.ErrInternal)
		}
	}
	if _, err := g.out(ctx, env, "add", "-A"); err != nil {
		return d, fmt.Errorf("diff: git add -A (a copy of the index): %v: %w", err, errcode.ErrInternal)
	}
	diff := []string{"diff", "--cached", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative"}
	names, err := g.out(ctx, env, append(diff, "-z", "--name-status", mb)...)
	if err != nil {
		return d, fmt.Errorf("diff: git diff --name-status: %v: %w", err, errcode.ErrInternal)
	}
	counts, err := g.out(ctx, env, append(diff, "-z", "--numstat", mb)...)
	if err != nil {
		return d, fmt.Errorf("diff: git diff --numstat: %v: %w", err, errcode.ErrInternal)
	}
	if d.Files, err = files(names, counts); err != nil {
		return d, fmt.Errorf("diff: %v: %w", err, errcode.ErrInternal)
	}
	if opt.Stat || len(d.Files) == 0 {
		return d, nil
	}
	patch, truncated, err := g.capped(ctx, env, append(diff, "--patch", mb)...)
	if err != nil {
		return d, fmt.Errorf("diff: git diff --patch: %v: %w", err, errcode.ErrInternal)
	}
	d.Truncated = truncated
	sections := ParsePatch(patch, truncated)
	for i := range d.Files {
		if i < len(sections) {
			d.Files[i].Hunks = sections[i]
		}
	}
	return d, nil
}

// git runs git in one checkout.
type git struct {
	dir string
	opt Options
}

// command is git with args in g.dir, env added to a clean environment: no
// GIT_DIR or the like inherited from whoever started the daemon, and no
// optional lock taken on the person's index.
func (g *git) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	// A split index would write its shared part beside the person's
	// index; the copy is written whole instead.
	full := append([]string{"-C", g.dir, "-c", "core.quotepath=off", "-c", "core.fsmonitor=false", "-c", "core.splitIndex=false",
		"-c", "diff.noprefix=false", "-c", "diff.mnemonicprefix=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// out runs git and returns its output, trimmed of the last newline; an
// error carries git's own message.
func (g *git) out(ctx context.Context, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opt.Timeout)
	defer cancel()
	cmd := g.command(ctx, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := g.opt.Run(cmd); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// capped runs git and keeps at most MaxBytes of its output; past that it
// stops git and says truncated.
func (g *git) capped(ctx context.Context, env []string, args ...string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opt.Timeout)
	defer cancel()
	cmd := g.command(ctx, env, args...)
	w := &capWriter{max: g.opt.MaxBytes, full: cancel}
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errOut
	err := g.opt.Run(cmd)
	if w.over {
		return w.buf.Bytes(), true, nil
	}
	if err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, false, errors.New(msg)
	}
	return w.buf.Bytes(), false, nil
}

// capWriter keeps the first max bytes and, past them, stops the command
// (full) and takes the rest without keeping it, so git never blocks on a
// pipe nobody reads.
type capWriter struct {
	buf  bytes.Buffer
	max  int
	over bool
	full func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.over {
		return len(p), nil
	}
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:room])
		w.over = true
		w.full()
		return len(p), nil
	}
	return w.buf.Write(p)
}

// copyIndex copies the checkout's index to path, so git can add the
// worktree to it without the person's index changing; the copy keeps
// the index's file stat cache, so only changed files are read.
func (g *git) copyIndex(ctx context.Context, path string) error {
	idx, err := g.out(ctx, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return err
	}
	src, err := os.Open(idx)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(path)
		return err
	}
	return dst.Close()
}
