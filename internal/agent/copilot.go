package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Copilot is GitHub Copilot CLI (@github/copilot, the `copilot` command).
const Copilot = "copilot"

// Copilot CLI as 1.0.102 draws itself (testdata/copilot): its dialogs
// are boxes with numbered choices and a ❯ cursor (a folder-trust dialog
// first, then "Do you want to run this command?" with the command in a
// box of its own); its status row says "Working" while it works and its
// footer "Interactive · Manual Approval · / commands" at its prompt. A
// usage limit is an error row "✗ 429 …" under the prompt that met it.
// Its default asks before running a command (Manual Approval).
func init() {
	Register(Copilot, func() *Adapter {
		boxChoice := re(`^\s*│\s*(?:❯\s*)?\d+\.\s+(.+?)\s*│\s*$`)
		latest := re(`^ ❯ \S`)
		return &Adapter{
			Name:        Copilot,
			Commands:    []string{"copilot"},
			Wiring:      copilotWiring,
			Transcripts: copilotTranscripts,
			Rules: []Rule{
				{
					Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
					After:   re(`Confirm folder trust`),
					When:    res(`Do you trust the files in this folder\?`, `1\.\s+Yes`),
					Prompt:  re(`(Do you trust the files in this folder\?)`),
					Choice:  boxChoice,
					Proceed: re(`^Yes$`),
				},
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					When:    res(`Do you want to (?:run this command|make this edit|create|edit|allow)`, `1\.\s+Yes`),
					Prompt:  re(`^\s*│\s*│\s+(.+?)\s*│\s*│\s*$`),
					Choice:  boxChoice,
					Proceed: re(`^Yes$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:  res(`(?i)^\s*✗ .*(?:quota|usage limit|rate limit|\b429\b)`),
					Until: ParseReset,
				},
				{Name: "working", State: api.AgentWorking, When: res(`^\s*\S?\s*(?:Working|Thinking)\b.*\besc\b`)},
				{Name: "prompt", State: api.AgentReady, When: res(`Interactive · .*/ commands`)},
			},
			Argv:       copilotArgv,
			UsageLimit: usageLimit,
		}
	})
}

// copilotArgv: --resume ID or --continue, --model, --allow-all for
// approval auto (its default asks: nothing for ask); a job is
// `-p PROMPT --output-format json`. It has no turn bound.
func copilotArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("copilot: max_turns: %w", ErrUnsupported)
	}
	var args []string
	switch {
	case o.ResumeSession != "":
		args = append(args, "--resume="+o.ResumeSession)
	case o.Continue:
		args = append(args, "--continue")
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	if o.Approval == ApprovalAuto {
		args = append(args, "--allow-all")
	}
	if o.Job {
		args = append(args, "--output-format", "json", "--prompt="+o.Prompt)
	}
	return args, nil
}

// copilotWiring gives Copilot CLI harness's MCP server with
// --additional-mcp-config, which adds to the user's own servers
// (~/.copilot/mcp-config.json) for this run.
func copilotWiring(spec WireSpec) (Wiring, error) {
	if !spec.MCP {
		return Wiring{}, nil
	}
	return Wiring{Args: []string{jsonArg("--additional-mcp-config", map[string]any{"mcpServers": map[string]any{
		ServerName: map[string]any{"type": "local", "command": spec.Exe, "args": []string{"mcp"}, "tools": []string{"*"}},
	}})}}, nil
}

// copilotTranscripts: Copilot CLI keeps each session's events as
// HOME/.copilot/session-state/<session>/events.jsonl: session.start (its
// id and cwd), user.message, assistant.message (text, tool requests),
// session.usage_record (each request's tokens), tool.execution_complete
// and session.error.
var copilotTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".copilot", "session-state")
		if ValidSession(session) {
			if m, _ := filepath.Glob(filepath.Join(dir, session, "events.jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(filepath.Join(dir, "*", "events.jsonl"), workdir, run)
	},
	Read: readCopilotTranscript,
}

func readCopilotTranscript(data []byte) Transcript {
	var t Transcript
	jsonLines(data, func(b []byte) {
		var r struct {
			Type      string          `json:"type"`
			Timestamp time.Time       `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}
		if json.Unmarshal(b, &r) != nil {
			return
		}
		var d map[string]any
		_ = json.Unmarshal(r.Data, &d)
		switch r.Type {
		case "session.start":
			t.SessionID = str(d, "sessionId")
		case "user.message":
			t.Turns = append(t.Turns, Turn{Time: r.Timestamp, Role: "user", Text: str(d, "content")})
		case "assistant.message":
			turn := Turn{Time: r.Timestamp, Role: "assistant", Text: strings.TrimSpace(str(d, "content")), Model: str(d, "model")}
			if turn.Model != "" {
				t.Model = turn.Model
			}
			reqs, _ := d["toolRequests"].([]any)
			for _, q := range reqs {
				qm, _ := q.(map[string]any)
				in, _ := json.Marshal(qm["arguments"])
				turn.Tools = append(turn.Tools, ToolCall{ID: str(qm, "toolCallId"), Name: str(qm, "name"), Input: string(in)})
			}
			t.Turns = append(t.Turns, turn)
		case "session.usage_record":
			u := obj(d, "usage")
			v := Usage{Input: int64(num(u, "inputTokens")), Output: int64(num(u, "outputTokens")),
				CacheRead: int64(num(u, "cacheReadTokens")), CacheWrite: int64(num(u, "cacheWriteTokens"))}
			addUsage(&t.Usage, v)
			if m := str(u, "model"); m != "" {
				t.Model = m
			}
		case "tool.execution_complete":
			outcome := "error"
			if d["success"] == true {
				outcome = "ok"
			}
			settle(t.Turns, str(d, "toolCallId"), outcome)
		case "session.error":
			t.LastAPIError = str(d, "message")
		}
	})
	return t
}
