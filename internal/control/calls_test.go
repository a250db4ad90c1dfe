package control

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

type callKey struct{ kind, project, tool string }

// fakeCallLog counts one call per key and remembers the last query.
type fakeCallLog struct {
	keys []callKey
	args api.CallsArgs
}

func (f *fakeCallLog) Query(_ context.Context, a api.CallsArgs) (api.CallsResult, error) {
	f.args = a
	return api.CallsResult{Calls: []api.CallRecord{{ID: 4, Tool: "git__status"}}, NextCursor: 4}, nil
}

func (f *fakeCallLog) Stats(match func(kind, project, tool string) bool) (api.CallStats, []api.ToolCallStats) {
	total := api.CallStats{Errors: map[string]uint64{}}
	var tools []api.ToolCallStats
	for _, k := range f.keys {
		if match(k.kind, k.project, k.tool) {
			total.Calls++
			tools = append(tools, api.ToolCallStats{Kind: k.kind, Tool: k.tool, CallStats: api.CallStats{Calls: 1}})
		}
	}
	return total, tools
}

func (f *fakeCallLog) Info() api.CallLogInfo {
	return api.CallLogInfo{Path: "/state/calls", Written: 9}
}

func TestUpstreamRowsCountTheCallsThatReachThem(t *testing.T) {
	log := &fakeCallLog{keys: []callKey{
		{api.CallTool, "", "git__a"},    // global session: global git
		{api.CallTool, "q", "git__b"},   // project q declares no git: global git
		{api.CallTool, "p", "git__a"},   // project p has its own git
		{api.CallTool, "p", "jira__x"},  // p's jira
		{api.CallTool, "", "jira__x"},   // no global jira: counted nowhere
		{api.CallPrompt, "", "git__a"},  // a prompt is not an upstream tool
		{api.CallTool, "", "harness_x"}, // the facade
		{api.CallTool, "", "gitx__a"},   // another key with the same start
	}}
	c := &Control{opt: Options{Calls: log}}
	rows := []api.UpstreamStatus{{Key: "git"}, {Key: "git", Project: "p"}, {Key: "jira", Project: "p"}}
	c.addCallStats(rows)
	for i, want := range []uint64{2, 1, 1} {
		if got := rows[i].Calls.Calls; got != want {
			t.Errorf("row %s/%s: %d calls, want %d", rows[i].Project, rows[i].Key, got, want)
		}
	}
	if tools := rows[0].Calls.Tools; len(tools) != 2 || tools[0].Tool != "git__a" || tools[1].Tool != "git__b" {
		t.Errorf("global git tools %+v", tools)
	}

	none := []api.UpstreamStatus{{Key: "git"}}
	(&Control{}).addCallStats(none)
	if none[0].Calls.Errors == nil || none[0].Calls.Tools == nil {
		t.Errorf("without a log the row still has empty stats, not nulls: %+v", none[0].Calls)
	}
}

func TestCallsOpPassesItsArgumentsStrictly(t *testing.T) {
	f := newFixture(t, sleeper("a", ""))
	log := &fakeCallLog{}
	f.c.opt.Calls = log
	var res api.CallsResult
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cursor := uint64(3)
	in := api.CallsArgs{Harness: "a", Tool: "git__*", Since: &since, Limit: 5, Cursor: &cursor, WaitS: 1.5}
	if err := f.call(api.OpCalls, in, &res); err != nil {
		t.Fatal(err)
	}
	got := log.args
	if got.Harness != "a" || got.Tool != "git__*" || !got.Since.Equal(since) || got.Limit != 5 || *got.Cursor != 3 || got.WaitS != 1.5 {
		t.Errorf("the log got %+v", got)
	}
	if len(res.Calls) != 1 || res.NextCursor != 4 {
		t.Errorf("answer %+v", res)
	}
	if err := f.call(api.OpCalls, map[string]any{"name": "a"}, nil); !errors.Is(err, errcode.ErrInvalidArgument) {
		t.Errorf("unknown argument: %v", err)
	}
	var info api.DaemonInfo
	if err := f.call(api.OpDaemonInfo, struct{}{}, &info); err != nil {
		t.Fatal(err)
	}
	if info.CallLog == nil || info.CallLog.Path != "/state/calls" || info.CallLog.Written != 9 {
		t.Errorf("daemon_info call_log %+v", info.CallLog)
	}
	if !slices.Contains(api.Ops(), api.OpCalls) {
		t.Error("calls is not a wire op")
	}
}
