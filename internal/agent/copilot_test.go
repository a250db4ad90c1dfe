package agent

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_CopilotScreens(t *testing.T) {
	checkFixtures(t, Copilot, []want{
		{file: "trust", state: api.AgentWaiting, waitingFor: api.WaitingTrust, prompt: "Do you trust the files in this folder?",
			choices: []string{"Yes", "Yes, and remember this folder for future sessions", "No (Esc)"}, selected: 0, suggested: "Yes"},
		{file: "ready", state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch story.txt",
			choices: []string{"Yes", "Yes, and don't ask again for `touch` in this directory (/tmp/cp/work)",
				"No, and tell Copilot what to do differently (Esc to stop)"}, selected: 0, suggested: "Yes"},
		{file: "limited", state: api.AgentLimited, until: "09:22"},
	})
}

func TestScenario_CopilotRunOptionsAndTranscript(t *testing.T) {
	a := MustLookup(Copilot)
	args, err := a.Args(RunOptions{ResumeSession: "b888", Model: "m", Approval: ApprovalAuto})
	if want := []string{"--resume=b888", "--model", "m", "--allow-all"}; err != nil || !slices.Equal(args, want) {
		t.Errorf("%q %v, want %q", args, err, want)
	}
	if _, err := a.Args(RunOptions{MaxTurns: 2}); err == nil {
		t.Error("max_turns taken")
	}
	tr, err := a.ReadTranscriptFile(filepath.Join("testdata", "transcripts", "copilot.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "b8881a26-d55e-4c3a-9bf8-691efad6cad5" || tr.Model != "test-model" || tr.Usage != (Usage{Input: 20, Output: 10}) {
		t.Errorf("%+v", tr)
	}
	if len(tr.Turns) < 3 || tr.Turns[0].Text != "Make the story file" || len(tr.Turns[1].Tools) != 1 || tr.Turns[1].Tools[0].Outcome != "ok" {
		t.Errorf("turns %+v", tr.Turns)
	}
	if tr.LastAPIError == "" {
		t.Error("no last API error")
	}
}

// The MCP wiring is one --additional-mcp-config argument, which Copilot
// CLI adds to the user's own servers.
func TestScenario_CopilotWiringAddsAServer(t *testing.T) {
	w, err := MustLookup(Copilot).Wire(WireSpec{Exe: "/bin/harness", MCP: true})
	want := `--additional-mcp-config={"mcpServers":{"harness":{"args":["mcp"],"command":"/bin/harness","tools":["*"],"type":"local"}}}`
	if err != nil || len(w.Args) != 1 || w.Args[0] != want || len(w.Files) != 0 {
		t.Errorf("%+v %v\nwant %s", w, err, want)
	}
}
