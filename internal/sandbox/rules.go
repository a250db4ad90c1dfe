package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// readRoots turns "everything but deny" into what Landlock can say, a
// list of allowed hierarchies: each denied path's ancestors become
// list-only (list), and every sibling along the way a readable root
// (read). Landlock allows by hierarchy and has no "except", so the
// ancestors' other entries are enumerated now; an entry made in one of
// those ancestors later is unreadable (docs/design/sandbox.md). Symbolic
// links are never roots: access through one is checked at its target.
// deny holds absolute, cleaned paths; missing ones still hide the place
// they would be made.
func readRoots(deny []string) (read, list []string) {
	roots := map[string]bool{"/": true}
	listed := map[string]bool{}
	for _, d := range deny {
		if d == "/" {
			clear(roots)
			continue
		}
		root := ""
		for r := range roots {
			if within(d, r) {
				root = r
				break
			}
		}
		if root == "" {
			continue // already unreadable
		}
		delete(roots, root)
		split(root, d, roots, listed)
	}
	for r := range roots {
		read = append(read, r)
	}
	for l := range listed {
		list = append(list, l)
	}
	sort.Strings(read)
	sort.Strings(list)
	return read, list
}

// split replaces root, an ancestor of (or equal to) d, by its entries
// that do not lead to d, descending along d's path.
func split(root, d string, roots, listed map[string]bool) {
	for root != d {
		listed[root] = true
		rest := strings.TrimPrefix(d, root)
		rest = strings.TrimPrefix(rest, "/")
		next, _, _ := strings.Cut(rest, "/")
		ents, err := os.ReadDir(root)
		if err != nil {
			return // unreadable anyway: nothing below it is granted
		}
		for _, e := range ents {
			if e.Name() == next || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			roots[filepath.Join(root, e.Name())] = true
		}
		child := filepath.Join(root, next)
		if st, err := os.Lstat(child); err != nil || !st.IsDir() {
			return // d or an ancestor is missing or a file: stays ungranted
		}
		root = child
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Within reports whether p is dir or below it (both absolute and clean).
func Within(p, dir string) bool { return within(p, dir) }

// resolve is p absolute and clean, through its symbolic links as far as
// they exist, so a denied link denies its target.
func resolve(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
