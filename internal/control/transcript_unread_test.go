package control

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/agent"
)

// TestScenario_ATranscriptThatCannotBeReadIsLoggedOnceAndLeavesTheRunBe:
// a transcript the daemon cannot open (locked to it: here a path under a
// file, as root opens any file), or one of a shape the adapter does not
// know, gives the
// run nothing, and the reason is logged once however often the run's
// turns end; one cut short mid-record still gives its whole records.
func TestScenario_ATranscriptThatCannotBeReadIsLoggedOnceAndLeavesTheRunBe(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "transcripts", "claude-code.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.jsonl")
	cut := filepath.Join(dir, "cut.jsonl")
	locked := filepath.Join(unknown, "locked.jsonl")
	if err := os.WriteFile(unknown, []byte(`{"v":9,"entry":{"said":"hi"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, real[:len(real)-40], 0o600); err != nil {
		t.Fatal(err)
	}
	ad := agent.MustLookup(agent.ClaudeCode)
	var log bytes.Buffer
	c := &Control{log: slog.New(slog.NewTextHandler(&log, nil))}
	u := &unit{name: "a"}
	for _, path := range []string{locked, unknown, cut} {
		tr, err := ad.ReadTranscriptFile(path)
		problem := transcriptProblem(ad, tr, err)
		if path == cut {
			if problem != nil || len(tr.Turns) == 0 || tr.Usage.Output == 0 {
				t.Errorf("a transcript cut short: %v, %d turns, tokens %+v", problem, len(tr.Turns), tr.Usage)
			}
			continue
		}
		if problem == nil {
			t.Errorf("%s: no problem found in %+v", path, tr)
			continue
		}
		for range 3 { // three turns end
			c.transcriptUnread(u, 7, problem)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "locked.jsonl: not a directory") || !strings.Contains(lines[1], "no record of a shape agent claude-code writes") {
		t.Errorf("want one line for each reason, got:\n%s", log.String())
	}
	// Not written yet is no news.
	c.transcriptUnread(u, 8, agent.ErrNoTranscript)
	if n := strings.Count(log.String(), "\n"); n != 2 {
		t.Errorf("a transcript not written yet was logged:\n%s", log.String())
	}
}
