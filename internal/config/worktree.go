package config

import (
	"strings"
)

// DefaultWorktreeBranch is the branch template of a worktree: {name} is
// the harness's name (project/name for a project's).
const DefaultWorktreeBranch = "harness/{name}"

// Worktree (worktree) gives a harness a git worktree of its own as its
// workdir (docs/design/resources.md): `worktree = { repo, base, branch }`, or
// `worktree = true` with workdir the repository (a project's harness:
// the project's directory).
type Worktree struct {
	Repo   string // the repository ("~" expanded; a project's: under its root)
	Base   string // what the branch starts from; "" is the repository's HEAD
	Branch string // template; {name} is the harness's name
}

// worktree decodes the worktree key of h.
func (d *decoder) worktree(path []string, v any, h *Harness) {
	switch x := v.(type) {
	case bool:
		if x {
			h.Worktree = &Worktree{Branch: DefaultWorktreeBranch}
		}
		return
	case map[string]any:
		w := &Worktree{Branch: DefaultWorktreeBranch}
		for _, k := range sortedKeys(x) {
			kp := child(path, k)
			switch k {
			case "repo":
				w.Repo = d.path(kp, x[k])
			case "base":
				w.Base, _ = d.str(kp, x[k])
				// git would read a base beginning with "-" as an option.
				if strings.HasPrefix(w.Base, "-") {
					d.add(kp, "invalid base %q: a commit or branch, not starting with \"-\"", w.Base)
				}
			case "branch":
				w.Branch, _ = d.str(kp, x[k])
				if !validBranchTemplate(w.Branch) {
					d.add(kp, "invalid branch %q: a git branch name (no spaces, \"..\", \"~^:?*[\\\\\", not starting with \"-\"); {name} is the harness's name", w.Branch)
				}
			default:
				d.unknown(kp, x[k])
			}
		}
		h.Worktree = w
		return
	}
	d.add(path, "must be true or a table { repo, base, branch }, not %s", tomlType(v))
}

// checkWorktree runs once the harness's table is read: the repository of
// `worktree = true` is workdir, and a table's worktree is the workdir.
func (d *decoder) checkWorktree(path []string, t map[string]any, h *Harness) {
	w := h.Worktree
	if w == nil {
		return
	}
	_, isTable := t["worktree"].(map[string]any)
	switch {
	case isTable && h.Workdir != "":
		d.add(child(path, "workdir"), "cannot be combined with worktree = { … }: the worktree is the workdir")
	case !isTable:
		w.Repo = h.Workdir
	}
	if w.Repo == "" && h.Project == "" {
		if isTable {
			d.add(child(path, "worktree"), "repo is required")
		} else {
			d.add(child(path, "worktree"), "worktree = true needs workdir: the repository to take a worktree of")
		}
	}
}

func validBranchTemplate(b string) bool {
	return b != "" && !strings.HasPrefix(b, "-") && !strings.Contains(b, "..") &&
		!strings.ContainsAny(b, " \t\n~^:?*[\\") && !strings.HasSuffix(b, "/") && !strings.HasSuffix(b, ".lock")
}

// BranchFor is the branch of harness name.
func (w *Worktree) BranchFor(name string) string {
	return strings.ReplaceAll(w.Branch, "{name}", name)
}
