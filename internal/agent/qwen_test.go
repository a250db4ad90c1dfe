package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_QwenCodeScreens(t *testing.T) {
	checkFixtures(t, QwenCode, []want{
		{file: "ready", state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch story.txt",
			choices: []string{"Yes, allow once", "Always allow run 'touch *' commands in this project",
				"Always allow run 'touch *' commands for this user", "No, suggest changes (esc)"},
			selected: 0, suggested: "Yes, allow once"},
		// An MCP tool's dialog names the tool (harness's harness_list).
		{file: "permission-mcp", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "harness_list",
			choices: []string{"Yes, allow once", "Always allow mcp__harness__harness_list in this project",
				"Always allow mcp__harness__harness_list for this user", "No, suggest changes (esc)"},
			selected: 0, suggested: "Yes, allow once"},
		// Retrying a 429 by itself: limited, until the reset its message
		// names, not its retry countdown.
		{file: "limited-retrying", busy: true, state: api.AgentLimited, until: "09:13"},
	})
}

func TestScenario_QwenCodeRunOptions(t *testing.T) {
	a := MustLookup(QwenCode)
	for _, c := range []struct {
		o    RunOptions
		args []string
	}{
		{RunOptions{Approval: ApprovalAsk, Continue: true}, []string{"--continue", "--approval-mode", "default"}},
		{RunOptions{ResumeSession: "abc-1", Model: "m", MaxTurns: 4}, []string{"--resume", "abc-1", "--model", "m", "--max-session-turns", "4"}},
		{RunOptions{Job: true, Prompt: "--- x", Approval: ApprovalAuto}, []string{"--approval-mode", "yolo", "--output-format", "json", "--prompt=--- x"}},
	} {
		if args, err := a.Args(c.o); err != nil || !slices.Equal(args, c.args) {
			t.Errorf("%+v: %q %v, want %q", c.o, args, err, c.args)
		}
	}
}

func TestScenario_QwenCodeJobAndTranscript(t *testing.T) {
	a := MustLookup(QwenCode)
	out, err := os.ReadFile(filepath.Join("testdata", "jobs", "qwen-code-ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.JobResult(out)
	if err != nil || r.SessionID != "fe40fcd5-3175-4676-9d01-19d78f1415c5" || r.Result != "Done: the file is there." ||
		r.Usage != (Usage{Input: 20, Output: 10}) || r.Model != "test-model" {
		t.Errorf("job %+v %v", r, err)
	}
	tr, err := a.ReadTranscriptFile(filepath.Join("testdata", "transcripts", "qwen-code.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "05995081-b31d-4a7d-a7d5-4a74c48ea9a9" || tr.Model != "test-model" || tr.Usage.Input == 0 || tr.Usage.Output == 0 {
		t.Errorf("%+v", tr)
	}
	if len(tr.Turns) < 3 || tr.Turns[0].Role != "user" || tr.Turns[0].Text != "Make the story file" {
		t.Fatalf("turns %+v", tr.Turns)
	}
	if c := tr.Turns[1].Tools; len(c) != 1 || c[0].Name != "run_shell_command" || c[0].Outcome != "ok" {
		t.Errorf("tool calls %+v", c)
	}
	if tr.LastAPIError == "" {
		t.Error("the 429 it logged is not the last API error")
	}
}

// The MCP wiring is a system settings file of harness's own: the user's
// system settings with the harness server added.
func TestScenario_QwenCodeWiringKeepsTheUsersSystemSettings(t *testing.T) {
	dir := t.TempDir()
	w, err := MustLookup(QwenCode).Wire(WireSpec{Exe: "/bin/harness", MCP: true, Dir: dir,
		Env: map[string]string{"QWEN_CODE_SYSTEM_SETTINGS_PATH": "/etc/mine.json"},
		ReadFile: func(p string) ([]byte, error) {
			if p != "/etc/mine.json" {
				return nil, os.ErrNotExist
			}
			return []byte(`{"mcpServers":{"mine":{"command":"x"}},"general":{"vimMode":true}}`), nil
		}})
	path := filepath.Join(dir, QwenSettingsFile)
	if err != nil || !slices.Equal(w.Env, []string{"QWEN_CODE_SYSTEM_SETTINGS_PATH=" + path}) || len(w.Files) != 1 || len(w.Args) != 0 {
		t.Fatalf("%+v %v", w, err)
	}
	got := string(w.Files[0].Data)
	for _, want := range []string{`"mine"`, `"vimMode": true`, `"/bin/harness"`} {
		if !strings.Contains(got, want) {
			t.Errorf("settings lack %s:\n%s", want, got)
		}
	}
}
