package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

func TestScenario_OpencodeScreens(t *testing.T) {
	checkFixtures(t, OpenCode, []want{
		{file: "ready", state: api.AgentReady},
		{file: "limited-retrying", busy: true, state: api.AgentLimited, until: "21:58"},
	})
}

// opencode's permission dialog has its choices on one row and its cursor
// only as a colour: harness reads the three choices and answers from the
// first, where the dialog opens, with Left and Right.
func TestScenario_OpencodePermissionIsAnsweredSideways(t *testing.T) {
	a := MustLookup(OpenCode)
	s := Screen{Shown: true, Paste: true, Lines: []string{
		"     Let me run it.",
		"     $ touch story.txt",
		"  ┃  △ Permission required",
		"  ┃    # Shell command",
		"  ┃",
		"  ┃  $ touch story.txt",
		"  ┃",
		"  ┃   Allow once   Allow always   Reject                                 ctrl+f fullscreen  ⇆ select  enter confirm",
	}}
	st := a.Classify(s, time.Now())
	want := []string{"Allow once", "Allow always", "Reject"}
	if st.AgentState != api.AgentWaiting || st.WaitingFor != api.WaitingPermission || st.Prompt != "touch story.txt" ||
		!slices.Equal(st.Choices, want) || st.Suggested != "Allow once" {
		t.Fatalf("%+v", st)
	}
	r, _ := a.Rule(s)
	for _, c := range []struct {
		target int
		keys   []string
	}{{0, []string{"Enter"}}, {2, []string{"Right", "Right", "Enter"}}} {
		keys, err := r.AnswerKeys(c.target, r.Selected(s.Lines), len(want))
		if err != nil || !slices.Equal(keys, c.keys) {
			t.Errorf("choice %d: keys %v, %v; want %v", c.target, keys, err, c.keys)
		}
	}
}

func TestScenario_OpencodeRunOptions(t *testing.T) {
	a := MustLookup(OpenCode)
	for _, c := range []struct {
		o    RunOptions
		args []string
		env  []string
	}{
		{RunOptions{ResumeSession: "ses_1", Model: "mock/m"}, []string{"--session", "ses_1", "--model", "mock/m"}, nil},
		{RunOptions{Continue: true, Approval: ApprovalAsk}, []string{"--continue"}, []string{`OPENCODE_PERMISSION={"bash":"ask","edit":"ask","webfetch":"ask"}`}},
		{RunOptions{Job: true, Prompt: "--- hi"}, []string{"run", "--format", "json", "--", "--- hi"}, nil},
	} {
		args, err := a.Args(c.o)
		if err != nil || !slices.Equal(args, c.args) || !slices.Equal(a.RunEnv(c.o), c.env) {
			t.Errorf("%+v: args %q env %q (%v), want %q %q", c.o, args, a.RunEnv(c.o), err, c.args, c.env)
		}
	}
	if _, err := a.Args(RunOptions{MaxTurns: 3}); err == nil {
		t.Error("max_turns taken")
	}
}

// The MCP wiring goes into OPENCODE_CONFIG_CONTENT over the user's own
// value of it, whose servers stay.
func TestScenario_OpencodeWiringKeepsTheUsersServers(t *testing.T) {
	w, err := MustLookup(OpenCode).Wire(WireSpec{Exe: "/bin/harness", MCP: true,
		Env: map[string]string{"OPENCODE_CONFIG_CONTENT": `{"mcp":{"mine":{"type":"local","command":["x"]}},"theme":"dark"}`}})
	if err != nil || len(w.Env) != 1 {
		t.Fatal(w, err)
	}
	want := `OPENCODE_CONFIG_CONTENT={"mcp":{"harness":{"command":["/bin/harness","mcp"],"enabled":true,"type":"local"},"mine":{"command":["x"],"type":"local"}},"theme":"dark"}`
	if w.Env[0] != want {
		t.Errorf("%s\nwant %s", w.Env[0], want)
	}
}

func TestScenario_OpencodeJobResult(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "jobs", "opencode-ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := MustLookup(OpenCode).JobResult(out)
	if err != nil || r.SessionID != "ses_db5e3bb8cffeFhNYKR6Y8bS45Q" || r.Result != "OK." || r.Usage != (Usage{Input: 10, Output: 5}) {
		t.Errorf("%+v %v", r, err)
	}
}

// opencode's SQLite store (testdata/transcripts/opencode.db, from 1.18.33:
// a prompt, a shell command approved and run, an answer, then a prompt
// that met a usage limit) reads as the session's turns with their tokens;
// without a session id the run's session is the one of its workdir it
// wrote during the run.
func TestScenario_OpencodeTranscriptFromItsDatabase(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".local", "share", "opencode")
	b, err := os.ReadFile(filepath.Join("testdata", "transcripts", "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	a := MustLookup(OpenCode)
	tr, err := a.ReadTranscript(home, "/tmp/oc/work", "ses_db5e881a4ffeTqfvVshUsiaKtj", RunSpan{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Model != "test-model" || tr.Usage != (Usage{Input: 20, Output: 10}) || len(tr.Turns) != 5 {
		t.Fatalf("%+v", tr)
	}
	if u := tr.Turns[0]; u.Role != "user" || u.Text != "Make the story file" {
		t.Errorf("first turn %+v", u)
	}
	if c := tr.Turns[1].Tools; len(c) != 1 || c[0].Name != "bash" || c[0].Outcome != "ok" || c[0].Input != `{"command":"touch story.txt"}` {
		t.Errorf("tool calls %+v", c)
	}
	// By workdir and time: the session written last during the run.
	run := RunSpan{Start: time.UnixMilli(1796539700000)}
	if tr, err := a.ReadTranscript(home, "/tmp/oc/work", "", run); err != nil || tr.SessionID != "ses_db5e3bb8cffeFhNYKR6Y8bS45Q" {
		t.Errorf("by workdir: %q %v", tr.SessionID, err)
	}
	if _, err := a.ReadTranscript(home, "/elsewhere", "", run); err == nil {
		t.Error("another workdir's session was taken")
	}
	// A database cut short keeps the fields empty with the reason.
	if err := os.WriteFile(filepath.Join(dir, "opencode.db"), b[:5000], 0o600); err != nil {
		t.Fatal(err)
	}
	if tr, err := a.ReadTranscript(home, "/tmp/oc/work", "ses_db5e881a4ffeTqfvVshUsiaKtj", RunSpan{}); err == nil {
		t.Errorf("a truncated database read as %+v", tr)
	}
}

// TestScenario_OpencodesOwnBackoffIsNoReset: a usage limit's reset is
// read from the message, else from a retry countdown that came from the
// provider (an hour); opencode's own backoff of seconds is no reset.
func TestScenario_OpencodesOwnBackoffIsNoReset(t *testing.T) {
	now := time.Date(2026, 12, 6, 11, 53, 0, 0, time.UTC)
	if _, ok := opencodeUntil("You exceeded your current quota, please check your pla [retrying in 2s attempt #1]", now); ok {
		t.Error("a 2 s backoff was taken for the reset")
	}
	if got, ok := opencodeUntil("… Usa… [retrying in 1h 58m attempt #1]", now); !ok || got.Sub(now) < time.Hour {
		t.Errorf("the provider's retry-after: %v %v", got, ok)
	}
}
