package config

import (
	"fmt"
	pathpkg "path"
	"slices"
	"strings"

	"github.com/harness-dev/harness/internal/api"
)

// grantAt is a decoded grant and the key it was written under.
type grantAt struct {
	path  []string
	grant api.Grant
}

// grant decodes a grant (mcp_allow, mcp_http_operator_allow): entries
// CLASS or NAMESPACE:CLASS, parsed by api.ParseScope. Whether each
// namespace is declared is checked by checkGrants, once every upstream of
// the file is known.
func (d *decoder) grant(path []string, v any) api.Grant {
	list, ok := d.strs(path, v)
	if !ok {
		return api.Grant{}
	}
	scopes := make([]api.Scope, 0, len(list))
	for _, e := range list {
		s, err := api.ParseScope(e)
		if err != nil {
			d.add(path, "%v", err)
			continue
		}
		scopes = append(scopes, s)
	}
	g := api.NewGrant(scopes...)
	d.grants = append(d.grants, grantAt{path: path, grant: g})
	return g
}

// checkGrants reports every namespace a grant names that is neither the
// facade nor an upstream declared in the file. (Project files cannot
// grant: a project's harnesses get the project rule, Project.Grant.)
func (d *decoder) checkGrants(upstreams map[string]*Upstream) {
	for _, g := range d.grants {
		for _, s := range g.grant.Scopes() {
			if s.Namespace == "" || s.Namespace == api.FacadeNamespace {
				continue
			}
			if _, ok := upstreams[s.Namespace]; ok {
				continue
			}
			d.add(g.path, "%q: unknown namespace %q (want %q or the key of an [mcp.KEY] upstream in this file%s)",
				s.String(), s.Namespace, api.FacadeNamespace, declared(upstreams))
		}
	}
}

// declared lists the upstream keys for a message: ": a, b", or "" for none.
func declared(upstreams map[string]*Upstream) string {
	if len(upstreams) == 0 {
		return "; it declares none"
	}
	keys := make([]string, 0, len(upstreams))
	for k := range upstreams {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return ": " + strings.Join(keys, ", ")
}

// toolKey decodes one of [mcp.KEY]'s classification keys into p and
// reports whether k was one of them.
func (d *decoder) toolKey(k string, kp []string, val any, p *ToolPolicy) bool {
	switch k {
	case "read_tools":
		p.ReadTools = d.globs(kp, val)
	case "write_tools":
		p.WriteTools = d.globs(kp, val)
	case "exclude_tools":
		p.ExcludeTools = d.globs(kp, val)
	case "exclude_prompts":
		p.ExcludePrompts = d.globs(kp, val)
	case "exclude_resources":
		p.ExcludeResources = d.globs(kp, val)
	default:
		return false
	}
	return true
}

// globs decodes a list of tool name globs (path.Match syntax: *, ?, [...]).
func (d *decoder) globs(path []string, v any) []string {
	list, ok := d.strs(path, v)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, g := range list {
		if g == "" {
			d.add(path, "empty glob")
			continue
		}
		if _, err := pathpkg.Match(g, ""); err != nil {
			d.add(path, "invalid glob %q: %v", g, err)
			continue
		}
		out = append(out, g)
	}
	return out
}

// overlaps warns about read_tools and write_tools globs that plainly match
// the same names: the same glob in both, or a literal name in one that a
// glob of the other matches. Write wins for such a tool. Globs that only
// meet on names the upstream may list are caught when it lists them (the
// broker warns per tool, in daemon_info).
func (d *decoder) overlaps(path []string, p ToolPolicy) {
	for _, w := range p.WriteTools {
		for _, r := range p.ReadTools {
			name, ok := plainOverlap(r, w)
			if !ok {
				continue
			}
			d.warn(child(path, "write_tools"), "%q and read_tools %q both match %s; write wins", w, r, name)
		}
	}
}

// plainOverlap reports whether globs a and b match a common name that is
// plain to see, and describes it.
func plainOverlap(a, b string) (string, bool) {
	switch {
	case a == b:
		return fmt.Sprintf("the same names (%q)", a), true
	case literal(a) && matches(b, a):
		return fmt.Sprintf("%q", a), true
	case literal(b) && matches(a, b):
		return fmt.Sprintf("%q", b), true
	}
	return "", false
}

func literal(glob string) bool { return !strings.ContainsAny(glob, `*?[\`) }

func matches(glob, name string) bool {
	ok, err := pathpkg.Match(glob, name)
	return err == nil && ok
}

// Grant is what every harness of the project may use (docs/design/mcp.md): read
// everywhere, plus write on the project's own upstreams (it declares and
// runs them anyway), never write or input on the facade or on a global
// upstream. Project files cannot write mcp_allow.
func (p *Project) Grant() api.Grant {
	scopes := []api.Scope{{Class: api.Read}}
	keys := make([]string, 0, len(p.Upstreams))
	for k := range p.Upstreams {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		scopes = append(scopes, api.Scope{Namespace: k, Class: api.Write})
	}
	return api.NewGrant(scopes...)
}
