package agent

import (
	"errors"
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
