package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_PiScreens(t *testing.T) {
	checkFixtures(t, Pi, []want{
		{file: "ready", state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		// A 429 it retries by itself, then gives up on: limited both
		// times, until the reset its message names.
		{file: "limited-retrying", busy: true, state: api.AgentLimited, until: "10:58"},
		{file: "limited", state: api.AgentLimited, until: "10:58"},
		// The old errors stay on screen above the next turn's answer: the
		// latest block is what counts.
		{file: "ready-after-limit", state: api.AgentReady},
	})
}

// pi asks before no tool and has no turn bound: approval = "ask" and
// max_turns are refused, not silently dropped.
func TestScenario_PiRunOptions(t *testing.T) {
	a := MustLookup(Pi)
	for _, c := range []struct {
		o    RunOptions
		args []string
	}{
		{RunOptions{Continue: true, Approval: ApprovalAuto}, []string{"--continue"}},
		{RunOptions{ResumeSession: "01a24ac6", Model: "mock/m"}, []string{"--session", "01a24ac6", "--model", "mock/m"}},
		{RunOptions{Job: true, Prompt: "--- x"}, []string{"--print", "--mode", "json", "--", "--- x"}},
	} {
		if args, err := a.Args(c.o); err != nil || !slices.Equal(args, c.args) {
			t.Errorf("%+v: %q %v, want %q", c.o, args, err, c.args)
		}
	}
	for _, o := range []RunOptions{{Approval: ApprovalAsk}, {MaxTurns: 3}} {
		if _, err := a.Args(o); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%+v: %v, want ErrUnsupported", o, err)
		}
	}
	if w, err := a.Wire(WireSpec{Exe: "/bin/harness", MCP: true, Hooks: true, Dir: t.TempDir()}); err != nil ||
		len(w.Args)+len(w.Env)+len(w.Files) != 0 {
		t.Errorf("pi has no MCP client, yet it is wired: %+v %v", w, err)
	}
}

func TestScenario_PiJobAndTranscript(t *testing.T) {
	a := MustLookup(Pi)
	out, err := os.ReadFile(filepath.Join("testdata", "jobs", "pi-ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.JobResult(out)
	if err != nil || r.SessionID != "01a24acb-326b-73d0-aaf2-1e56d5f785ad" || r.Result != "Job answer." ||
		r.Usage != (Usage{Input: 10, Output: 5}) || r.Model != "test-model" || r.CostUSD < 0.0001 || r.IsError {
		t.Errorf("job %+v %v", r, err)
	}
	tr, err := a.ReadTranscriptFile(filepath.Join("testdata", "transcripts", "pi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "01a24ac6-425b-74de-998c-ed3c02aed02e" || tr.Model != "test-model" || tr.Usage.Input == 0 || tr.Usage.Output == 0 {
		t.Errorf("%+v", tr)
	}
	if len(tr.Turns) < 3 || tr.Turns[0].Role != "user" || tr.Turns[0].Text != "Make the story file for me." {
		t.Fatalf("turns %+v", tr.Turns)
	}
	var calls []ToolCall
	for _, u := range tr.Turns {
		calls = append(calls, u.Tools...)
	}
	if len(calls) != 1 || calls[0].Name != "bash" || calls[0].Outcome != "ok" {
		t.Errorf("tool calls %+v", calls)
	}
	if tr.LastAPIError == "" {
		t.Error("the 429 it logged is not the last API error")
	}
	// pi writes each request's cost: harness takes it unless the
	// harness's own prices name the model.
	if c, ok := a.TranscriptCost(tr, nil); !ok || c != tr.CostUSD || c <= 0 {
		t.Errorf("cost %v %v (transcript says %v)", c, ok, tr.CostUSD)
	}
	if c, ok := a.TranscriptCost(tr, map[string]Price{"test-": {Input: 1e6}}); !ok || c != float64(tr.Usage.Input) {
		t.Errorf("cost by the harness's prices %v %v", c, ok)
	}
}

// At 120 columns the error breaks between "resets" and its time: the
// reset is read across the rows.
func TestScenario_PiReadsAResetBrokenAcrossRows(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 2, 0, 0, time.UTC)
	s := Screen{Shown: true, Paste: true, Lines: []string{
		" Go on.", "",
		" Error: 429 You exceeded your current quota, please check your plan and billing details. Usage limit reached, resets",
		" 11:02am.", "",
		strings.Repeat("─", 120), "", strings.Repeat("─", 120),
		"/work", "↑20 ↓10 $0.000 0.0%/128k (auto)                  test-model",
	}}
	st := MustLookup(Pi).Classify(s, now)
	if st.AgentState != api.AgentLimited || st.Until == nil || st.Until.Format("15:04") != "11:02" {
		t.Errorf("%+v", st)
	}
}
