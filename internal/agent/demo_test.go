package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// The demo agent's screens, captured from `harness demo-agent` running in
// a harness (harness screen): ready, working on a task, asking to edit
// with the cursor on Yes and then on No, and ready again after either
// answer.
func TestScenario_DemoAgentScreens(t *testing.T) {
	checkFixtures(t, Demo, []want{
		{file: "ready", state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		{file: "working", state: api.AgentWorking},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission,
			prompt: "Allow edit to README.md?", choices: []string{"Yes", "No"}, selected: 0, suggested: "Yes"},
		{file: "permission-no", state: api.AgentWaiting, waitingFor: api.WaitingPermission,
			prompt: "Allow edit to README.md?", choices: []string{"Yes", "No"}, selected: 1, suggested: "Yes"},
		{file: "answered", state: api.AgentReady},
		{file: "answered", busy: true, state: api.AgentReady},
		{file: "refused", state: api.AgentReady},
	})
}

// Answering the demo's dialog presses the arrows from the cursor to the
// choice, then Enter, as for the real agents.
func TestScenario_DemoAgentDialogIsAnsweredWithArrowsAndEnter(t *testing.T) {
	a := MustLookup(Demo)
	s := fixture(t, Demo, "permission")
	r, ok := a.Rule(s)
	if !ok {
		t.Fatal("no rule matches the permission dialog")
	}
	st := a.Classify(s, time.Now())
	i, err := Choose(st.Choices, "no")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := r.AnswerKeys(i, r.Selected(s.Lines), len(st.Choices))
	if err != nil || !slices.Equal(keys, []string{"Down", "Enter"}) {
		t.Fatalf("keys for No: %q, %v", keys, err)
	}
}

// A harness of the demo agent may have a prompt (typed once it is ready)
// and nothing else: the other run options are refused at load.
func TestScenario_DemoAgentTakesOnlyAnInteractivePrompt(t *testing.T) {
	a := MustLookup(Demo)
	if args, err := a.Args(RunOptions{Prompt: "do it"}); err != nil || len(args) != 0 {
		t.Fatalf("prompt: %q, %v", args, err)
	}
	for _, o := range []RunOptions{{Model: "m"}, {Approval: ApprovalAuto}, {MaxTurns: 3}, {Continue: true}, {Job: true, Prompt: "x"}} {
		if _, err := a.Args(o); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%+v: %v, want unsupported", o, err)
		}
	}
	if Infer("harness") != Generic {
		t.Error("the harness binary is inferred as the demo agent")
	}
}

// TestScenario_TheDemoAgentsSessionRecordIsItsRunsTurns: a run's record
// (as internal/demoagent writes it) is found among older runs' by its
// working directory and time, and read as turns: the task, and the edit
// said No to as a failed tool call.
func TestScenario_TheDemoAgentsSessionRecordIsItsRunsTurns(t *testing.T) {
	home, work := t.TempDir(), "/work/demo-wt"
	dir := filepath.Join(home, ".harness-demo", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lines := func(at time.Time, id, cwd string) string {
		ts := at.UTC().Format(time.RFC3339Nano)
		return `{"type":"session","id":"` + id + `","cwd":"` + cwd + `","timestamp":"` + ts + `"}
{"type":"user","timestamp":"` + ts + `","text":"Add a line"}
{"type":"assistant","timestamp":"` + ts + `","text":"Not editing README.md: you said No.","tool":{"name":"edit_file","input":{"file":"README.md"},"outcome":"denied"}}
`
	}
	for name, text := range map[string]string{
		"20261206T100000-0123456789abcdef.jsonl": lines(start.Add(time.Second), "0123456789abcdef", work),
		"20261206T100001-fedcba9876543210.jsonl": lines(start.Add(time.Second), "fedcba9876543210", "/elsewhere"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := MustLookup(Demo).ReadTranscript(home, work, "", RunSpan{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "0123456789abcdef" || len(tr.Turns) != 2 || tr.Turns[0].Role != "user" || tr.Turns[0].Text != "Add a line" {
		t.Fatalf("transcript %+v", tr)
	}
	if tools := tr.Turns[1].Tools; len(tools) != 1 || tools[0].Name != "edit_file" || tools[0].Outcome != "error" || tools[0].Input != `{"file":"README.md"}` {
		t.Fatalf("the refused edit: %+v", tools)
	}
	if _, err := MustLookup(Demo).ReadTranscript(home, "/nowhere", "", RunSpan{Start: start}); !errors.Is(err, ErrNoTranscript) {
		t.Fatalf("another directory's run: %v", err)
	}
}
