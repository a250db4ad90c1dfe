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

func TestScenario_ClineScreens(t *testing.T) {
	checkFixtures(t, Cline, []want{
		{file: "ready", state: api.AgentReady},
		{file: "working", busy: true, state: api.AgentWorking},
		// Retrying a usage limit by itself: nothing but its spinner.
		{file: "working-retrying", busy: true, state: api.AgentWorking},
		{file: "permission", state: api.AgentWaiting, waitingFor: api.WaitingPermission, prompt: "touch story-file",
			choices: []string{"Approve", "Deny"}, selected: -1, suggested: "Approve"},
		// The reset is broken across two rows mid-word ("11:" / "06am.").
		{file: "limited", state: api.AgentLimited, until: "11:06"},
		{file: "first", state: api.AgentReady},
	})
}

// With text in its input box Cline is ready, but the rule that reads it
// says the text is typed and not sent, so a send whose Enter was lost is
// seen and its Enter written again (Adapter.EnterAgain).
func TestScenario_ClineWithTextInItsInputIsReadAsTyped(t *testing.T) {
	a := MustLookup(Cline)
	for _, empty := range []string{"first", "ready"} {
		if r, ok := a.Rule(fixture(t, Cline, empty)); !ok || r.Typed {
			t.Errorf("%s: its empty input box is not read as its prompt (rule %v)", empty, r)
		}
	}
	if r, ok := a.Rule(fixture(t, Cline, "input-text")); !ok || !r.Typed || r.State != api.AgentReady {
		t.Errorf("Cline's screen with text in its input box is not read as typed (rule %v)", r)
	}
	if a.EnterAgain <= 0 {
		t.Error("Cline has no EnterAgain: a lost Enter would leave the prompt in its box")
	}
}

// Cline's dialog takes the choice's letter, not arrows and Enter.
func TestScenario_ClinePermissionIsAnsweredByItsLetter(t *testing.T) {
	a := MustLookup(Cline)
	s := fixture(t, Cline, "permission")
	r, ok := a.Rule(s)
	if !ok {
		t.Fatal("no rule reads the dialog")
	}
	for target, want := range []string{"y", "n"} {
		if keys, err := r.AnswerKeys(target, r.Selected(s.Lines), 2); err != nil || !slices.Equal(keys, []string{want}) {
			t.Errorf("choice %d: %v %v, want %q", target, keys, err, want)
		}
	}
}

func TestScenario_ClineRunOptions(t *testing.T) {
	a := MustLookup(Cline)
	for _, c := range []struct {
		o    RunOptions
		args []string
	}{
		// Its default approves every tool: ask must say no.
		{RunOptions{Approval: ApprovalAsk, ResumeSession: "1796551532738_f17mm"}, []string{"--id", "1796551532738_f17mm", "--auto-approve", "false"}},
		{RunOptions{Approval: ApprovalAuto, Model: "m"}, []string{"--model", "m", "--auto-approve", "true"}},
		{RunOptions{Job: true, Prompt: "--- x"}, []string{"--json", "--", "--- x"}},
	} {
		if args, err := a.Args(c.o); err != nil || !slices.Equal(args, c.args) {
			t.Errorf("%+v: %q %v, want %q", c.o, args, err, c.args)
		}
	}
	if _, err := a.Args(RunOptions{MaxTurns: 3}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("max_turns: %v, want ErrUnsupported", err)
	}
	if args, err := a.Args(RunOptions{Continue: true}); err != nil || len(args) != 0 {
		t.Errorf("continue: %q %v, want nothing", args, err)
	}
	if a.HasSession(func(string) string { return "" }, "/w") {
		t.Error("Cline cannot continue a session whose id it is not given")
	}
}

func TestScenario_ClineTranscript(t *testing.T) {
	a := MustLookup(Cline)
	home := t.TempDir()
	dir := filepath.Join(home, ".cline", "data", "sessions", "1796551532738_f17mm")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"1796551532738_f17mm.json", "1796551532738_f17mm.messages.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "transcripts", "cline", "1796551532738_f17mm", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// By the run's span and workdir, as a run without a known session
	// finds it.
	tr, err := a.ReadTranscript(home, "/tmp/agents-cl/work", "", RunSpan{Start: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "1796551532738_f17mm" || tr.Model != "test-model" || tr.Usage != (Usage{Input: 50, Output: 25}) {
		t.Errorf("%+v", tr)
	}
	if len(tr.Turns) < 2 || tr.Turns[0].Role != "user" || tr.Turns[0].Text != "Make the story file for me." {
		t.Fatalf("turns %+v", tr.Turns)
	}
	var calls []ToolCall
	for _, u := range tr.Turns {
		calls = append(calls, u.Tools...)
	}
	if len(calls) != 1 || calls[0].Name != "run_commands" || calls[0].Outcome != "ok" {
		t.Errorf("tool calls %+v", calls)
	}
	if !strings.Contains(tr.LastAPIError, "exceeded your current quota") {
		t.Errorf("last API error %q", tr.LastAPIError)
	}
	// Cline says 0 of a model it has no price for: no cost is known.
	if _, ok := a.TranscriptCost(tr, nil); ok {
		t.Errorf("a cost from Cline's 0: %+v", tr)
	}
}

// harness's MCP server goes into an MCP settings file of harness's own,
// the user's servers copied in; Cline finds it by CLINE_MCP_SETTINGS_PATH.
func TestScenario_ClineWiringKeepsTheUsersServers(t *testing.T) {
	dir := t.TempDir()
	user := "/home/u/.cline/data/settings/cline_mcp_settings.json"
	w, err := MustLookup(Cline).Wire(WireSpec{Exe: "/bin/harness", MCP: true, Dir: dir, Home: "/home/u",
		ReadFile: func(p string) ([]byte, error) {
			if p != user {
				return nil, os.ErrNotExist
			}
			return []byte(`{"mcpServers":{"mine":{"transport":{"type":"stdio","command":"x"}}}}`), nil
		}})
	path := filepath.Join(dir, ClineMCPFile)
	if err != nil || !slices.Equal(w.Env, []string{"CLINE_MCP_SETTINGS_PATH=" + path}) || len(w.Files) != 1 || w.Files[0].Path != path {
		t.Fatalf("%+v %v", w, err)
	}
	got := string(w.Files[0].Data)
	for _, want := range []string{`"mine"`, `"harness"`, `"/bin/harness"`, `"stdio"`} {
		if !strings.Contains(got, want) {
			t.Errorf("settings lack %s:\n%s", want, got)
		}
	}
}

// A program version whose screens differ from those its adapter knows:
// no rule of any adapter reads this one, and the state is the floor,
// working while busy and ready while idle, never waiting.
func TestScenario_AScreenNoRuleMatchesIsTheFloorForEveryAdapter(t *testing.T) {
	lines := []string{"Agent 9.0", "", "Shall I run touch x? (yes/no)", "", "> "}
	for _, name := range Names() {
		a := MustLookup(name)
		for _, busy := range []bool{false, true} {
			s := Screen{Lines: lines, Shown: true, Paste: true, Busy: busy}
			if r, ok := a.Rule(s); ok {
				t.Errorf("%s: rule %q reads a screen it was never shown", name, r.Name)
			}
			want := api.AgentReady
			if busy {
				want = api.AgentWorking
			}
			if st := a.Classify(s, time.Now()); st.AgentState != want {
				t.Errorf("%s, busy %v: %s, want %s", name, busy, st.AgentState, want)
			}
		}
	}
}

func TestScenario_ClineJobResult(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "jobs", "cline-ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := MustLookup(Cline).JobResult(out)
	if err != nil || r.Result != "Done." || r.Usage != (Usage{Input: 10, Output: 5}) || r.Model != "test-model" || r.IsError {
		t.Errorf("job %+v %v", r, err)
	}
	// A usage limit it retried six times, as 3.0.65 ends such a job.
	if out, err = os.ReadFile(filepath.Join("testdata", "jobs", "cline-limit.jsonl")); err != nil {
		t.Fatal(err)
	}
	r, err = MustLookup(Cline).JobResult(out)
	if err != nil || !r.IsError || !r.Limited || r.Until.IsZero() || !strings.Contains(r.Result, "exceeded your current quota") {
		t.Errorf("a job that met its limit: %+v %v", r, err)
	}
}
