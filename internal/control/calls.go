package control

import (
	"context"
	"strings"

	"github.com/harness-dev/harness/internal/api"
)

// CallLog is the log of MCP calls (internal/calllog) as control reads it:
// the sessions write it, control answers `calls` and adds its stats to
// mcp_status and daemon_info.
type CallLog interface {
	Query(ctx context.Context, a api.CallsArgs) (api.CallsResult, error)
	// Stats sums the calls whose (kind, caller's project, tool) match, in
	// total and per tool.
	Stats(match func(kind, project, tool string) bool) (api.CallStats, []api.ToolCallStats)
	Info() api.CallLogInfo
}

// Calls answers `calls`: records of MCP calls, filtered, paged by cursor,
// and with a cursor and wait_s a long poll for the next one.
func (c *Control) Calls(ctx context.Context, a api.CallsArgs) (api.CallsResult, error) {
	if c.opt.Calls == nil {
		return api.CallsResult{Calls: []api.CallRecord{}}, nil
	}
	return c.opt.Calls.Query(ctx, a)
}

// addCallStats fills in each upstream row's calls. A session reaches the
// upstream KEY of its own project when that project declares one, the
// global KEY otherwise, so that is where its calls count.
func (c *Control) addCallStats(rows []api.UpstreamStatus) {
	type scoped struct{ project, key string }
	own := map[scoped]bool{}
	for _, r := range rows {
		if r.Project != "" {
			own[scoped{r.Project, r.Key}] = true
		}
	}
	for i := range rows {
		r := &rows[i]
		r.Calls = api.UpstreamCallStats{CallStats: api.CallStats{Errors: map[string]uint64{}}, Tools: []api.ToolCallStats{}}
		if c.opt.Calls == nil {
			continue
		}
		total, tools := c.opt.Calls.Stats(func(kind, project, tool string) bool {
			key, _, ok := strings.Cut(tool, "__")
			if kind != api.CallTool || !ok || key != r.Key {
				return false
			}
			if r.Project != "" {
				return project == r.Project
			}
			return !own[scoped{project, r.Key}]
		})
		r.Calls = api.UpstreamCallStats{CallStats: total, Tools: tools}
	}
}

// callLogInfo is the call log's part of daemon_info; nil without a log.
func (c *Control) callLogInfo() *api.CallLogInfo {
	if c.opt.Calls == nil {
		return nil
	}
	info := c.opt.Calls.Info()
	return &info
}
