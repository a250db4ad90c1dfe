//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/trajectory"
)

// trajRow is one row of list_trajectories.
type trajRow struct {
	Run       uint64  `json:"run"`
	Cause     string  `json:"cause"`
	StartedAt *string `json:"started_at"`
	EndedAt   *string `json:"ended_at"`
	ExitCode  *int    `json:"exit_code"`
	Entries   int     `json:"entries"`
	Bytes     int64   `json:"bytes"`
}

// trajPage is the answer of get_trajectory.
type trajPage struct {
	Name    string `json:"name"`
	Run     uint64 `json:"run"`
	Entries []struct {
		ID    uint64 `json:"id"`
		Kind  string `json:"kind"`
		RunID uint64 `json:"run_id"`
		Text  string `json:"text"`
	} `json:"entries"`
	NextCursor uint64 `json:"next_cursor"`
	Truncated  bool   `json:"truncated"`
}

func (p trajPage) output() []string {
	var out []string
	for _, e := range p.Entries {
		if e.Kind == "output" {
			out = append(out, e.Text)
		}
	}
	return out
}

func listTraj(t *testing.T, s *mcp.ClientSession, name string) []trajRow {
	t.Helper()
	res := callTool(t, s, "harness_list_trajectories", map[string]any{"name": name})
	if res.IsError {
		t.Fatalf("list_trajectories %s: %v", name, res.Content)
	}
	var body struct {
		Trajectories []trajRow `json:"trajectories"`
	}
	resultJSON(t, res, &body)
	return body.Trajectories
}

func getTraj(t *testing.T, s *mcp.ClientSession, args map[string]any) trajPage {
	t.Helper()
	res := callTool(t, s, "harness_get_trajectory", args)
	if res.IsError {
		t.Fatalf("get_trajectory %v: %v", args, res.Content)
	}
	var p trajPage
	resultJSON(t, res, &p)
	return p
}

// TestTrajectories_OptedInJobThroughSessionAndCLI: an opted-in job run three times yields three transcripts holding what each
// run printed; a non-opted harness is refused naming the key; a cursor
// returns only later entries; a fourth run drops the oldest past the bound
// (HARNESS_TRAJECTORY_MAX_RUNS=3); transcripts outlive a daemon restart.
func TestTrajectories_OptedInJobThroughSessionAndCLI(t *testing.T) {
	t.Setenv(trajectory.EnvMaxRuns, "3")
	dir := t.TempDir()
	counter := filepath.Join(dir, "count")
	f := newFleet(t, fmt.Sprintf(`
[harness.journal]
cmd = "sh"
args = ["-c", "n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; echo run-$n-begin; echo run-$n-middle; echo run-$n-end"]
restart = "no"
harvest_trajectory = true

[harness.quiet]
cmd = "sh"
args = ["-c", "echo not kept"]
restart = "no"
`, counter))

	for range 3 {
		f.MustRun("trigger", "journal", "--wait", "--timeout", "20s")
	}
	f.MustRun("trigger", "quiet", "--wait", "--timeout", "20s")
	s := f.mcpSession("", false, nil)

	var rows []trajRow
	f.WaitFor("three transcripts with their output", 10*time.Second, func() bool {
		rows = listTraj(t, s, "journal")
		return len(rows) == 3 && rows[2].Entries >= 3
	})
	for i, r := range rows {
		if r.Cause != "trigger" || r.ExitCode == nil || *r.ExitCode != 0 || r.StartedAt == nil || r.EndedAt == nil || r.Bytes <= 0 {
			t.Fatalf("row %d: %+v", i, r)
		}
		p := getTraj(t, s, map[string]any{"name": "journal", "run": r.Run})
		want := []string{fmt.Sprintf("run-%d-begin", i+1), fmt.Sprintf("run-%d-middle", i+1), fmt.Sprintf("run-%d-end", i+1)}
		if got := p.output(); !slices.Equal(got, want) {
			t.Fatalf("run %d printed %v, transcript holds %v", r.Run, want, got)
		}
		for _, e := range p.Entries {
			if e.RunID != r.Run {
				t.Fatalf("run %d transcript holds an entry of run %d: %+v", r.Run, e.RunID, e)
			}
		}
	}

	// Paging: a cursor returns only later entries, and a tiny cap pages.
	first := getTraj(t, s, map[string]any{"name": "journal", "run": rows[1].Run})
	cut := first.Entries[1].ID
	later := getTraj(t, s, map[string]any{"name": "journal", "run": rows[1].Run, "cursor": cut})
	if len(later.Entries) != len(first.Entries)-2 || later.Entries[0].ID <= cut || later.NextCursor != first.NextCursor {
		t.Fatalf("after cursor %d: %+v (all: %+v)", cut, later, first)
	}
	small := getTraj(t, s, map[string]any{"name": "journal", "run": rows[1].Run, "max_bytes": 1})
	if len(small.Entries) != 1 || !small.Truncated || small.NextCursor != first.Entries[0].ID {
		t.Fatalf("max_bytes 1: %+v", small)
	}

	// Refusals keep their codes; not_permitted names the key to set.
	res := callTool(t, s, "harness_list_trajectories", map[string]any{"name": "quiet"})
	if code := errorCode(t, res); code != "not_permitted" || !strings.Contains(fmt.Sprint(res.StructuredContent), "harvest_trajectory = true") {
		t.Fatalf("non-opted harness: %s %v", code, res.StructuredContent)
	}
	if code := errorCode(t, callTool(t, s, "harness_get_trajectory", map[string]any{"name": "quiet", "run": 1})); code != "not_permitted" {
		t.Fatalf("get on non-opted harness: %s", code)
	}
	if code := errorCode(t, callTool(t, s, "harness_get_trajectory", map[string]any{"name": "journal", "run": 999999})); code != "invalid_argument" {
		t.Fatalf("unknown run: %s", code)
	}
	if code := errorCode(t, callTool(t, s, "harness_list_trajectories", map[string]any{"name": "ghost"})); code != "unknown_harness" {
		t.Fatalf("unknown harness: %s", code)
	}

	// The CLI answers the same operations.
	var cliRows []trajRow
	f.MustJSON(&cliRows, "trajectories", "journal")
	if len(cliRows) != 3 || cliRows[0].Run != rows[0].Run {
		t.Fatalf("cli trajectories: %+v", cliRows)
	}
	if out := f.MustRun("trajectory", "journal", fmt.Sprint(rows[2].Run)); !strings.Contains(out, "run-3-middle") || strings.Contains(out, "run-2") {
		t.Fatalf("cli trajectory:\n%s", out)
	}
	var cliPage trajPage
	f.MustJSON(&cliPage, "trajectory", "journal", fmt.Sprint(rows[1].Run), "--cursor", fmt.Sprint(cut))
	if len(cliPage.Entries) != len(later.Entries) || cliPage.Entries[0].ID != later.Entries[0].ID {
		t.Fatalf("cli page after cursor: %+v", cliPage)
	}
	out, _, code := f.Run("trajectories", "quiet", "--json")
	var failure struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code == 0 || json.Unmarshal([]byte(out), &failure) != nil || failure.Error.Code != "not_permitted" ||
		!strings.Contains(failure.Error.Message, "harvest_trajectory") {
		t.Fatalf("cli non-opted: exit %d, %s", code, out)
	}

	// Retention: a fourth run drops the oldest past the bound of three.
	f.MustRun("trigger", "journal", "--wait", "--timeout", "20s")
	f.WaitFor("the fourth transcript", 10*time.Second, func() bool {
		rows = listTraj(t, s, "journal")
		return len(rows) == 3 && rows[2].Entries >= 3
	})
	if got := getTraj(t, s, map[string]any{"name": "journal", "run": rows[2].Run}).output(); !slices.Contains(got, "run-4-middle") {
		t.Fatalf("newest transcript %v", got)
	}
	if rows[0].Run != cliRows[1].Run {
		t.Fatalf("kept runs %+v, want the oldest (%d) dropped", rows, cliRows[0].Run)
	}
	if code := errorCode(t, callTool(t, s, "harness_get_trajectory", map[string]any{"name": "journal", "run": cliRows[0].Run})); code != "invalid_argument" {
		t.Fatalf("dropped run: %s", code)
	}

	// Transcripts are on disk: a new daemon on the same state dir serves them.
	f.Stop()
	f.start()
	var again []trajRow
	f.MustJSON(&again, "trajectories", "journal")
	// (Stopping the daemon may add a lifecycle event to the newest run.)
	if len(again) != 3 || again[0].Run != rows[0].Run || again[1].Entries != rows[1].Entries || again[2].Entries < rows[2].Entries {
		t.Fatalf("after restart: %+v, before %+v", again, rows)
	}
}
