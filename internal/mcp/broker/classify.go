package broker

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
)

// A Policy classifies an upstream's tools for scoping (docs/design/mcp.md): globs
// in path.Match syntax over the upstream's own tool names, from [mcp.KEY]
// read_tools, write_tools and exclude_tools.

func policyEqual(p, q Policy) bool {
	return slices.Equal(p.ReadTools, q.ReadTools) && slices.Equal(p.WriteTools, q.WriteTools) &&
		slices.Equal(p.ExcludeTools, q.ExcludeTools) && slices.Equal(p.ExcludePrompts, q.ExcludePrompts) &&
		slices.Equal(p.ExcludeResources, q.ExcludeResources)
}

// classify decides the class of the tool name of upstream key, annotated
// with ann (nil when the upstream sent none). An exclude_tools
// match hides it; else write_tools, then read_tools, then the upstream's
// readOnlyHint decide. A tool matched by both read_tools and write_tools
// is write, and warning says so.
func classify(p Policy, key, name string, ann *mcp.ToolAnnotations) (tc api.ToolClass, warning string) {
	tc = api.ToolClass{Tool: name, Name: key + Separator + name}
	if g, ok := firstMatch(p.ExcludeTools, name); ok {
		tc.Why, tc.Rule = api.WhyExcluded, fmt.Sprintf("exclude_tools %q", g)
		return tc, ""
	}
	r, isRead := firstMatch(p.ReadTools, name)
	w, isWrite := firstMatch(p.WriteTools, name)
	switch {
	case isWrite && isRead:
		tc.Class, tc.Why = api.Write, api.WhyOverride
		tc.Rule = fmt.Sprintf("write_tools %q (read_tools %q matches too; write wins)", w, r)
		warning = fmt.Sprintf("mcp.%s: tool %s matches read_tools %q and write_tools %q; write wins", key, name, r, w)
	case isWrite:
		tc.Class, tc.Why, tc.Rule = api.Write, api.WhyOverride, fmt.Sprintf("write_tools %q", w)
	case isRead:
		tc.Class, tc.Why, tc.Rule = api.Read, api.WhyOverride, fmt.Sprintf("read_tools %q", r)
	case ann != nil && ann.ReadOnlyHint:
		tc.Class, tc.Why, tc.Rule = api.Read, api.WhyHint, "readOnlyHint: true"
	case ann != nil:
		tc.Class, tc.Why, tc.Rule = api.Write, api.WhyHint, "readOnlyHint: false"
	default:
		tc.Class, tc.Why, tc.Rule = api.Write, api.WhyHint, "no readOnlyHint"
	}
	return tc, warning
}

// firstMatch returns the first glob that matches name. Config has checked
// the globs; one that is malformed matches nothing.
func firstMatch(globs []string, name string) (string, bool) {
	for _, g := range globs {
		if ok, err := path.Match(g, name); err == nil && ok {
			return g, true
		}
	}
	return "", false
}

// installLocked recomputes what u serves from its last listing (u.all),
// its policy and its held-back tools (u.held, gateway.go): the visible
// tools, every tool's class and the warnings. It
// reports whether anything a session sees changed. Caller holds b.mu.
func (b *Broker) installLocked(u *upstream) (changed bool) {
	served := make(map[string]*mcp.Tool, len(u.all))
	classes := make(map[string]api.ToolClass, len(u.all))
	warnings := slices.Clone(u.listWarnings)
	for _, name := range slices.Sorted(maps.Keys(u.all)) {
		t := u.all[name]
		tc, w := classify(u.policy, u.key, name, t.Annotations)
		if w != "" {
			warnings = append(warnings, w)
		}
		classes[name] = tc
		if _, held := u.held[name]; tc.Why != api.WhyExcluded && !held {
			served[name] = t
		}
	}
	changed = !sameTools(u.tools, served) || !maps.Equal(u.classes, classes)
	u.tools, u.classes, u.warnings = served, classes, warnings
	return changed
}
