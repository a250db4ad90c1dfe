package runs

import (
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_LatestPassesOverWhatTheCallerSkips: Latest answers the
// newest run the caller does not skip, within the last limit runs, as
// List would have.
func TestScenario_LatestPassesOverWhatTheCallerSkips(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "runs.jsonl"), 10)
	a := begin(t, s, "job", api.CauseSchedule)
	if err := s.End(a.ID, intp(3), ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Record("job", api.CauseSchedule, api.RunSkipped, "busy"); err != nil {
			t.Fatal(err)
		}
	}
	skipped := func(r Run) bool { return r.Outcome == api.RunSkipped }
	r, ok := s.Latest("job", 50, skipped)
	if !ok || r.ID != a.ID || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Fatalf("Latest = %+v, %v; want run %d", r, ok, a.ID)
	}
	*r.ExitCode = 9 // a copy: the store keeps its own
	if again, _ := s.Latest("job", 50, skipped); *again.ExitCode != 3 {
		t.Fatal("Latest handed out the store's own run")
	}
	if _, ok := s.Latest("job", 2, skipped); ok {
		t.Fatal("Latest looked past its limit")
	}
	if _, ok := s.Latest("other", 50, skipped); ok {
		t.Fatal("Latest found a run of a unit without runs")
	}
}
