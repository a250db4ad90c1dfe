package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Project is a validated project file: a repository's own harness.toml
// with [harness.*] and [mcp.*] tables and an optional [project] name.
//
// It may not declare [daemon], [profile.*], [mcp.prompts], mcp_allow or
// schedule: those grant authority or change the daemon, and a cloned
// repository must not do that. Harnesses keep the default MCPAllow
// ["read"]. Relative workdir and env_file resolve against Root, and an
// absent workdir is Root. Every Harness and Upstream has Project = Name;
// maps are keyed by the plain name (callers qualify it as "project/name").
type Project struct {
	Name      string // [project].name, or the sanitised directory name
	Root      string // absolute directory holding the file
	Path      string // absolute path of the file
	Harnesses map[string]*Harness
	Order     []string // harness names in file order
	Upstreams map[string]*Upstream
}

// LoadProject reads and validates the project file at path. Unlike Load, a
// missing file is an error: a project is declared by its file.
func LoadProject(path string) (*Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: displayName(path), Msg: err.Error(), err: err}
	}
	data, err := readFile(abs)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = "no project file at " + abs
		}
		return nil, &Error{File: displayName(abs), Msg: msg, err: err}
	}
	return parseProject(abs, data)
}

// parseProject validates data as the project file at abs (absolute).
func parseProject(abs string, data []byte) (*Project, error) {
	src, err := decode(abs, data)
	if err != nil {
		return nil, err
	}
	d := src.d
	p := &Project{
		Root:      filepath.Dir(abs),
		Path:      abs,
		Harnesses: map[string]*Harness{},
		Upstreams: map[string]*Upstream{},
	}
	p.Name = d.projectName(src.raw["project"], p.Root)
	for _, k := range sortedKeys(src.raw) {
		v := src.raw[k]
		switch k {
		case "project":
			// Decoded first: every unit carries the name.
		case "harness":
			for name, hv := range d.subtables([]string{k}, v) {
				if h := d.harness(name, hv, p.Name); h != nil {
					h.Workdir = underRoot(p.Root, h.Workdir, true)
					h.EnvFile = underRoot(p.Root, h.EnvFile, false)
					if w := h.Worktree; w != nil {
						// The project's repository unless the table names one.
						if w.Repo == "" {
							w.Repo = p.Root
						} else {
							w.Repo = underRoot(p.Root, w.Repo, false)
						}
					}
					p.Harnesses[name] = h
				}
			}
		case "mcp":
			for key, uv := range d.subtables([]string{k}, v) {
				if key == "prompts" {
					d.add([]string{k, key}, globalOnly)
					continue
				}
				if u := d.upstream(key, uv, p.Name); u != nil {
					u.Workdir = underRoot(p.Root, u.Workdir, true)
					u.EnvFile = underRoot(p.Root, u.EnvFile, false)
					p.Upstreams[key] = u
				}
			}
		case "daemon", "profile":
			d.add([]string{k}, globalOnly)
		default:
			d.unknown([]string{k}, v)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	p.Order = src.harnessOrder(p.Harnesses)
	return p, nil
}

// projectName decodes the optional [project] table; without a name the
// project is named after its directory.
func (d *decoder) projectName(v any, root string) string {
	path := []string{"project"}
	if v != nil {
		if t, ok := d.table(path, v); ok {
			name, named := "", false
			for _, k := range sortedKeys(t) {
				kp, val := child(path, k), t[k]
				if k != "name" {
					d.unknown(kp, val)
					continue
				}
				if s, ok := d.str(kp, val); ok {
					if !harnessNameRE.MatchString(s) {
						d.add(kp, `invalid project name %q: use letters, digits, "-" and "_"`, s)
					}
					name, named = s, true
				}
			}
			if named {
				return name
			}
		}
	}
	name := SanitizeName(filepath.Base(root))
	if name == "" {
		d.add(path, "cannot derive a project name from directory %q; set [project] name", filepath.Base(root))
	}
	return name
}

// SanitizeName turns a directory name into a project name: lowercase,
// every character outside [a-z0-9_-] replaced by '-', and leading and
// trailing '-' trimmed. It returns "" when nothing usable is left.
func SanitizeName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// underRoot resolves a relative path against the project root; an empty
// path stays empty unless orRoot, in which case it is the root itself.
func underRoot(root, p string, orRoot bool) string {
	switch {
	case p == "":
		if orRoot {
			return root
		}
		return ""
	case filepath.IsAbs(p):
		return p
	}
	return filepath.Join(root, p)
}

// SameFile reports whether two paths name the same file; when either
// cannot be read, whether they are the same path once cleaned.
func SameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(fa, fb)
}
