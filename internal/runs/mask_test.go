package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AJobsResultAndNoteAreMaskedBeforeTheHistoryKeepsThem: an
// agent's answer (a job's result) and the note taken from it may quote a
// secret of the fleet; with a mask set, neither the run nor the file holds
// it.
func TestScenario_AJobsResultAndNoteAreMaskedBeforeTheHistoryKeepsThem(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s := openT(t, path, 0)
	s.SetMask(func(text string) string { return strings.ReplaceAll(text, secret, "[masked]") })
	r, err := s.Begin("job", api.CauseSchedule)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAgent(r.ID, api.RunAgent{Result: "the key is " + secret}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(r.ID, Ending{Outcome: api.RunFailed, Note: "API error: bad key " + secret}); err != nil {
		t.Fatal(err)
	}
	held, err := s.Record("job", api.CauseSchedule, api.RunHeld, "held: "+secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{r.ID, held.ID} {
		got, _ := s.Get(id)
		if strings.Contains(got.Result+got.Note, secret) || !strings.Contains(got.Result+got.Note, "[masked]") {
			t.Errorf("run %d: result %q note %q", id, got.Result, got.Note)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the file holds the secret:\n%s", b)
	}
}

// TestScenario_ARunKeepsItsNewestToolCallsAndAMaskedAPIError: a run from a
// long conversation keeps the newest MaxRunToolCalls tool calls and counts
// the rest; the transcript's last API error is masked before the history
// keeps it.
func TestScenario_ARunKeepsItsNewestToolCallsAndAMaskedAPIError(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	s := openT(t, path, 0)
	s.SetMask(func(text string) string { return strings.ReplaceAll(text, secret, "[masked]") })
	r, err := s.Begin("agent", api.CauseManual)
	if err != nil {
		t.Fatal(err)
	}
	var calls []api.RunToolCall
	for i := range api.MaxRunToolCalls + 7 {
		calls = append(calls, api.RunToolCall{Name: "Bash", Outcome: []string{"ok", "error"}[i%2]})
	}
	calls[len(calls)-1].Name = "Read"
	if err := s.SetAgent(r.ID, api.RunAgent{ToolCalls: calls, LastAPIError: "401 bad key " + secret}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(r.ID)
	if len(got.ToolCalls) != api.MaxRunToolCalls || got.ToolCallsOmitted != 7 || got.ToolCalls[len(got.ToolCalls)-1].Name != "Read" {
		t.Errorf("tool calls: %d kept, %d omitted, last %+v", len(got.ToolCalls), got.ToolCallsOmitted, got.ToolCalls[len(got.ToolCalls)-1])
	}
	if got.LastAPIError != "401 bad key [masked]" {
		t.Errorf("last API error %q", got.LastAPIError)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
		t.Errorf("the history file:\n%s", b)
	}
}
