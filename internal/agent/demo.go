package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Demo is the scripted agent built into the harness binary (`harness
// demo-agent`, internal/demoagent) that `harness demo` runs: it needs no
// model, network or installed CLI. It draws its whole screen anew each
// time: a prompt box while ready, a spinner while it works, and a dialog
// with numbered choices and a ❯ cursor before it edits a file.
const Demo = "demo"

func init() {
	Register(Demo, func() *Adapter {
		return &Adapter{
			Name: Demo,
			// No Commands: its cmd is the harness binary itself, so a
			// harness names it with agent = "demo".
			Rules: []Rule{
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:  re(`^\s*Allow edit to \S.*\?\s*$`),
					When:   res(`^\s*(?:❯\s*)?1\.\s+Yes\s*$`),
					Prompt: re(`^\s*(Allow edit to \S.*\?)\s*$`),
					Choice: re(`^\s*(?:❯\s*)?\d+\.\s+(.+)$`),
					// Yes lets it edit and go on: the page marks it,
					// as for the real agents' dialogs.
					Proceed: re(`^Yes$`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt\)\s*$`)},
				{Name: "prompt", State: api.AgentReady, When: res(`^│ >`, `^\s*Enter to send · Ctrl-C to quit\s*$`)},
			},
			Argv:        demoArgv,
			Transcripts: demoTranscripts,
		}
	})
}

// demoArgv: the demo agent takes no flags. An interactive prompt is typed
// once it is ready, never an argument, so it is the one option it has.
func demoArgv(o RunOptions) ([]string, error) {
	if o.Job || o.Model != "" || o.Approval != "" || o.MaxTurns > 0 || o.ResumeSession != "" || o.Continue {
		return nil, fmt.Errorf("agent %s: only an interactive prompt: %w", Demo, ErrUnsupported)
	}
	return nil, nil
}

// demoTranscripts: the demo agent keeps a file of JSON lines per run in
// ~/.harness-demo/sessions (internal/demoagent's session.go, which
// writes them): a session line naming its id and working directory, then
// a line per user and assistant turn, an assistant's edit with its
// outcome.
var demoTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".harness-demo", "sessions")
		if ValidSession(session) {
			if m, _ := filepath.Glob(filepath.Join(dir, "*-"+session+".jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(filepath.Join(dir, "*.jsonl"), workdir, run)
	},
	Read: readDemoTranscript,
}

func readDemoTranscript(data []byte) Transcript {
	t := Transcript{Model: "scripted"}
	jsonLines(data, func(b []byte) {
		var r struct {
			Type      string    `json:"type"`
			ID        string    `json:"id"`
			Timestamp time.Time `json:"timestamp"`
			Text      string    `json:"text"`
			Tool      *struct {
				Name    string          `json:"name"`
				Input   json.RawMessage `json:"input"`
				Outcome string          `json:"outcome"`
			} `json:"tool"`
		}
		if json.Unmarshal(b, &r) != nil {
			return
		}
		switch r.Type {
		case "session":
			t.SessionID = r.ID
		case "user", "assistant":
			u := Turn{Time: r.Timestamp, Role: r.Type, Text: r.Text}
			if r.Type == "assistant" {
				u.Model = t.Model
			}
			if r.Tool != nil {
				outcome := r.Tool.Outcome
				if outcome != "ok" {
					outcome = "error" // denied or failed: the edit did not happen
				}
				u.Tools = []ToolCall{{Name: r.Tool.Name, Input: string(r.Tool.Input), Outcome: outcome}}
			}
			t.Turns = append(t.Turns, u)
		}
	})
	return t
}
