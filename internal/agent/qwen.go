package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// QwenCode is Qwen Code (@qwen-code/qwen-code, the `qwen` command).
const QwenCode = "qwen-code"

// Qwen Code as 0.24.4 draws itself (testdata/qwen-code), a fork of Gemini
// CLI: ">   Type your message" while it waits for input, "esc to cancel"
// on its spinner row while it works, and its permission dialog under the
// tool's "? Shell COMMAND" row with numbered choices and a › cursor. It
// needs Node 22. By default it approves tools by a classifier of its own
// (auto mode): approval = "ask" runs it with --approval-mode default.
// It retries a 429 ten times, the first for a while with only its
// spinner, then with the error and "↻ Retrying in 23 seconds… (attempt
// 1/10)" above it: that screen is limited.
func init() {
	Register(QwenCode, func() *Adapter {
		choice := re(`^\s*(?:[›>●]\s*)?\d+\.\s+(.+?)\s*$`)
		latest := re(`^\s*> \S`)
		return &Adapter{
			Name:        QwenCode,
			Commands:    []string{"qwen"},
			Wiring:      qwenWiring,
			Transcripts: qwenTranscripts,
			// It turns bracketed paste on as its input mounts (its
			// useBracketedPaste hook, 0.24.4); a paste sent before that,
			// into a resumed session still loading, was lost.
			KeysWithPaste: true,
			Rules: []Rule{
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After: re(`^\s*\?\s+\S`),
					When:  res(`Allow execution of|Apply this change\?|Allow .*\?\s*$`, `1\.\s+Yes, allow once`),
					// "? Shell COMMAND (description) ←", or for an MCP
					// tool "? TOOL (SERVER MCP Server) {ARGS} ←".
					Prompt:  re(`^\s*\?\s+(?:Shell\s+)?(.+?)\s+\(.*\)(?:\s+\{.*\})?\s*←?\s*$`),
					Choice:  choice,
					Proceed: re(`^Yes, allow once$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:  res(`(?i)exceeded your current quota|usage limit|quota exceeded|rate limit|API Error: 429`),
					Until: ParseReset,
				},
				{
					Name: "api error", State: api.AgentError, After: latest, Message: true,
					When:   res(`\[API Error|✕ .*(?:error|Error)`),
					Unless: res(`esc to cancel`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to cancel`)},
				{Name: "prompt", State: api.AgentReady, When: res(`Type your message`), Unless: res(`Initializing\.\.\.`)},
			},
			Argv:       qwenArgv,
			JobResult:  qwenJobResult,
			UsageLimit: usageLimit,
		}
	})
}

// qwenArgv: --approval-mode default (ask) or yolo (auto); --resume ID or
// --continue; --model; a job is `-o json --prompt=PROMPT`; --max-session-turns.
func qwenArgv(o RunOptions) ([]string, error) {
	var args []string
	switch {
	case o.ResumeSession != "":
		args = append(args, "--resume", o.ResumeSession)
	case o.Continue:
		args = append(args, "--continue")
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	switch o.Approval {
	case ApprovalAsk:
		args = append(args, "--approval-mode", "default")
	case ApprovalAuto:
		args = append(args, "--approval-mode", "yolo")
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-session-turns", fmt.Sprint(o.MaxTurns))
	}
	if o.Job {
		args = append(args, "--output-format", "json", "--prompt="+o.Prompt)
	}
	return args, nil
}

// qwenJobResult reads `qwen -o json`: one JSON array of Claude Code's
// stream events (or, with stream-json, one a line), the last of type
// result with session_id, result, is_error and usage.
func qwenJobResult(out []byte) (JobResult, error) {
	vals := jsonValues(out)
	if i := bytes.IndexByte(out, '['); i >= 0 {
		var arr []map[string]any
		if json.Unmarshal(bytes.TrimSpace(out[i:]), &arr) == nil {
			vals = arr
		}
	}
	var r JobResult
	found := false
	for _, m := range vals {
		switch str(m, "type") {
		case "system":
			if mo := str(m, "model"); mo != "" {
				r.Model = mo
			}
		case "result":
			found = true
			r.SessionID, r.Result, r.IsError = str(m, "session_id"), str(m, "result"), m["is_error"] == true
			u := obj(m, "usage")
			r.Usage = Usage{Input: int64(num(u, "input_tokens")), Output: int64(num(u, "output_tokens")),
				CacheRead: int64(num(u, "cache_read_input_tokens"))}
			if r.IsError {
				r.Limited = isUsageLimit(r.Result)
			}
		}
	}
	if !found {
		return r, fmt.Errorf("qwen: no result event in the job's output")
	}
	return r, nil
}

// qwenSystemSettings is the variable that points Qwen Code at its system
// settings file, and defaultQwenSystemSettings where it looks without it.
const (
	qwenSystemSettings        = "QWEN_CODE_SYSTEM_SETTINGS_PATH"
	defaultQwenSystemSettings = "/etc/qwen-code/settings.json"
)

// QwenSettingsFile is the name of the system settings file harness writes
// for a harness of Qwen Code, under WireSpec.Dir.
const QwenSettingsFile = "qwen-system-settings.json"

// qwenWiring gives Qwen Code harness's MCP server in a system settings
// file of harness's own: the user's system settings (if any) plus the
// harness server, pointed at by QWEN_CODE_SYSTEM_SETTINGS_PATH for this
// run. Qwen merges mcpServers of all its settings files, so the user's
// own servers stay. (Not --mcp-config: a flag before the harness's args
// would go to node when the harness runs `node cli-entry.js`.) 0.24.4
// asks nothing of the file's owner, unlike Gemini CLI.
func qwenWiring(spec WireSpec) (Wiring, error) {
	if !spec.MCP || spec.Dir == "" {
		return Wiring{}, nil
	}
	settings := map[string]any{}
	src := spec.Env[qwenSystemSettings]
	if src == "" {
		src = defaultQwenSystemSettings
	}
	if spec.ReadFile != nil {
		if b, err := spec.ReadFile(src); err == nil && len(b) > 0 {
			if err := json.Unmarshal(b, &settings); err != nil {
				return Wiring{}, fmt.Errorf("system settings %s: %w", src, err)
			}
		}
	}
	subMap(settings, "mcpServers")[ServerName] = map[string]any{"command": spec.Exe, "args": []string{"mcp"}}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Wiring{}, err
	}
	path := filepath.Join(spec.Dir, QwenSettingsFile)
	return Wiring{Env: []string{qwenSystemSettings + "=" + path}, Files: []File{{Path: path, Data: b}}}, nil
}

// qwenTranscripts: Qwen Code keeps each chat as
// HOME/.qwen/projects/<dir>/chats/<session>.jsonl, one record a line:
// user and assistant messages (Gemini's parts), the assistant's with
// usageMetadata, and system records (telemetry, an api_error among them).
var qwenTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".qwen", "projects", "*", "chats")
		if ValidSession(session) {
			if m, _ := filepath.Glob(filepath.Join(dir, session+".jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(filepath.Join(dir, "*.jsonl"), workdir, run)
	},
	Read: readQwenTranscript,
}

type qwenRecord struct {
	SessionID string    `json:"sessionId"`
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Model     string    `json:"model"`
	Message   struct {
		Parts []struct {
			Text         string `json:"text"`
			FunctionCall *struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
		} `json:"parts"`
	} `json:"message"`
	Usage *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	System struct {
		UIEvent map[string]any `json:"uiEvent"`
	} `json:"systemPayload"`
	ToolCallResult struct {
		CallID string `json:"callId"`
		Status string `json:"status"`
	} `json:"toolCallResult"`
}

func readQwenTranscript(data []byte) Transcript {
	var t Transcript
	jsonLines(data, func(b []byte) {
		var r qwenRecord
		if json.Unmarshal(b, &r) != nil {
			return
		}
		if r.SessionID != "" {
			t.SessionID = r.SessionID
		}
		var text []string
		for _, p := range r.Message.Parts {
			if p.Text != "" {
				text = append(text, p.Text)
			}
		}
		switch r.Type {
		case "tool_result":
			outcome := "ok"
			if r.ToolCallResult.Status != "success" {
				outcome = "error"
			}
			settle(t.Turns, r.ToolCallResult.CallID, outcome)
		case "user":
			if len(text) > 0 {
				t.Turns = append(t.Turns, Turn{Time: r.Timestamp, Role: "user", Text: strings.Join(text, "\n")})
			}
		case "assistant":
			turn := Turn{Time: r.Timestamp, Role: "assistant", Text: strings.Join(text, "\n"), Model: r.Model}
			if r.Model != "" {
				t.Model = r.Model
			}
			if r.Usage != nil {
				turn.Usage = Usage{Input: r.Usage.Prompt - r.Usage.Cached, Output: r.Usage.Candidates, CacheRead: r.Usage.Cached}
				addUsage(&t.Usage, turn.Usage)
			}
			for _, p := range r.Message.Parts {
				if c := p.FunctionCall; c != nil {
					turn.Tools = append(turn.Tools, ToolCall{ID: c.ID, Name: c.Name, Input: string(c.Args)})
				}
			}
			t.Turns = append(t.Turns, turn)
		case "system":
			if ev := r.System.UIEvent; str(ev, "event.name") == "qwen-code.api_error" {
				t.LastAPIError = str(ev, "error_message")
			}
		}
	})
	return t
}
