package runs

import (
	"path/filepath"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_OutcomesPersistAndRecordsAreRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s, err := Open(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	a := begin(t, s, "job", api.CauseSchedule)
	if err := s.End(a.ID, intp(0), ""); err != nil {
		t.Fatal(err)
	}
	sk, err := s.Record("job", api.CauseSchedule, api.RunSkipped, "run 1 was active")
	if err != nil {
		t.Fatal(err)
	}
	if !sk.Ended() || sk.PID != 0 || sk.Outcome != api.RunSkipped || sk.ID <= a.ID {
		t.Fatalf("skipped record %+v", sk)
	}
	open := begin(t, s, "job", api.CauseTrigger)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, 10)
	if n := s.CloseDangling("SIGKILL"); n != 1 {
		t.Fatalf("closed %d dangling", n)
	}
	got := map[uint64]api.RunOutcome{}
	for _, r := range s.List("job", 0) {
		got[r.ID] = r.Outcome
	}
	want := map[uint64]api.RunOutcome{a.ID: api.RunOK, sk.ID: api.RunSkipped, open.ID: api.RunInterrupted}
	for id, o := range want {
		if got[id] != o {
			t.Errorf("run %d: outcome %q, want %q (all %v)", id, got[id], o, got)
		}
	}
}

func TestKeepRunsBoundsOneUnit(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "runs.jsonl"), 10)
	for range 5 {
		if _, err := s.Record("kept", api.CauseSchedule, api.RunSkipped, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Record("other", api.CauseSchedule, api.RunSkipped, ""); err != nil {
			t.Fatal(err)
		}
	}
	s.SetRetain("kept", 2)
	if n := len(s.List("kept", 0)); n != 2 {
		t.Fatalf("kept has %d runs, want 2", n)
	}
	if n := len(s.List("other", 0)); n != 5 {
		t.Fatalf("other has %d runs, want 5", n)
	}
	if _, err := s.Record("kept", api.CauseSchedule, api.RunSkipped, ""); err != nil {
		t.Fatal(err)
	}
	if n := len(s.List("kept", 0)); n != 2 {
		t.Fatalf("kept has %d runs after one more, want 2", n)
	}
}
