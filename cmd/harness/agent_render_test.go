package main

import (
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_DescribeMarksTheChoiceThatGoesOn: a waiting agent's
// choices are all shown, numbered, and the one its adapter says goes on
// is marked, not the first.
func TestScenario_DescribeMarksTheChoiceThatGoesOn(t *testing.T) {
	v := api.AgentView{Agent: "claude-code", AgentState: api.AgentWaiting, WaitingFor: api.WaitingTrust,
		Prompt:  "Is this a project you created or one you trust?",
		Choices: []string{"No, exit", "Yes, I trust this folder"}, Suggested: "Yes, I trust this folder"}
	want := "claude-code, waiting for trust: Is this a project you created or one you trust? [1. No, exit | 2. Yes, I trust this folder (suggested)]"
	if got := agentText(v); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
