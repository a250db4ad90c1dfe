package top

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// unitRow is one harness as `list` and `describe` answer it.
type unitRow struct {
	api.UnitInfo // with activity and idle_s, which activity events also fill in

	// fetched is when the answer arrived: a shown idle time runs on from it.
	fetched time.Time
}

// idleFor is how long the unit has been idle at now, and whether that is
// known.
func (u *unitRow) idleFor(now time.Time) (time.Duration, bool) {
	if u.IdleS == nil || u.Activity != api.ActivityIdle {
		return 0, false
	}
	d := time.Duration(*u.IdleS*float64(time.Second)) + now.Sub(u.fetched)
	return max(d, 0), true
}

// upstreamUnit is the unit name of an upstream, as events and `logs` name
// it: "mcp.KEY", or "PROJECT/mcp.KEY" for a project's. Harness names
// cannot contain '.', so the two never collide.
func upstreamUnit(project, key string) string {
	if project == "" {
		return "mcp." + key
	}
	return project + "/mcp." + key
}

// isUpstreamUnit reports whether an event's unit is an upstream.
func isUpstreamUnit(name string) bool {
	_, base := splitProject(name)
	return strings.HasPrefix(base, "mcp.")
}

// splitProject splits "PROJECT/name" into its project and its own name.
func splitProject(name string) (project, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// rowKind says what a line of the table is.
type rowKind int

const (
	rowGroup    rowKind = iota // a project's heading
	rowUnit                    // a harness
	rowUpstream                // an upstream MCP server
)

// row is one line of the table. name is what selection and the ops use:
// the harness's or the upstream's unit name.
type row struct {
	kind    rowKind
	name    string
	project string
	unit    *unitRow
	up      *api.UpstreamStatus
	text    string // a heading's own text (a host's), when set
}

// selectable reports whether the cursor may rest on the row.
func (r row) selectable() bool { return r.kind != rowGroup }

// label is the row's first cell: a unit's own name (its project is the
// heading above it), or the heading's text.
func (r row) label() string {
	if r.kind == rowGroup {
		if r.text != "" {
			return r.text
		}
		if r.project == "" {
			return "global"
		}
		return "project " + r.project
	}
	_, base := splitProject(r.name)
	return base
}

// matches reports whether the row passes the filter (lower case).
func (r row) matches(filter string) bool {
	if filter == "" {
		return true
	}
	var hay string
	switch r.kind {
	case rowUnit:
		hay = r.name + " " + r.unit.State + " " + r.unit.Activity + " " + r.unit.Description
	case rowUpstream:
		hay = r.name + " " + r.up.State + " upstream"
	}
	return strings.Contains(strings.ToLower(hay), filter)
}

// buildRows orders the fleet for the table: one group per project (the
// global scope first, then projects by name), in each its harnesses by
// name and then its upstreams by key. Headings appear only when there is
// more than one group, and a group the filter empties is left out.
func buildRows(units map[string]*unitRow, ups map[string]*api.UpstreamStatus, filter string) []row {
	filter = strings.ToLower(filter)
	groups := map[string][]row{}
	for name, u := range units {
		r := row{kind: rowUnit, name: name, project: u.Project, unit: u}
		if r.matches(filter) {
			groups[u.Project] = append(groups[u.Project], r)
		}
	}
	for name, up := range ups {
		r := row{kind: rowUpstream, name: name, project: up.Project, up: up}
		if r.matches(filter) {
			groups[up.Project] = append(groups[up.Project], r)
		}
	}
	projects := make([]string, 0, len(groups))
	for p := range groups {
		projects = append(projects, p)
	}
	slices.Sort(projects) // "" (the global scope) sorts first
	out := make([]row, 0, len(units)+len(ups)+len(projects))
	for _, p := range projects {
		rs := groups[p]
		slices.SortFunc(rs, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name))
		})
		if len(projects) > 1 {
			out = append(out, row{kind: rowGroup, project: p})
		}
		out = append(out, rs...)
	}
	return out
}

// counts is the fleet's summary for the title line.
type counts struct {
	harnesses, running, failed, upstreams int
}

func countFleet(units map[string]*unitRow, ups map[string]*api.UpstreamStatus) counts {
	c := counts{harnesses: len(units), upstreams: len(ups)}
	for _, u := range units {
		switch u.State {
		case "running":
			c.running++
		case "failed", "degraded":
			c.failed++
		}
	}
	return c
}
