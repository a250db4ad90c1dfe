package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Claude Code (@anthropic-ai/claude-code, the `claude` command), as
// 2.1.328 draws itself (testdata/claude-code, captured from the real
// program against internal/agent/modelapi). Its dialogs are lists with a
// ❯ cursor; the latest turn starts at the last submitted prompt row
// ("❯ text").
func init() {
	Register(ClaudeCode, func() *Adapter {
		latest := re(`^❯ \S`)
		return &Adapter{
			Name:     ClaudeCode,
			Commands: []string{"claude", "claude-code"},
			Wiring:   claudeWiring,
			Hook:     claudeHook,
			// Public list prices, USD per million tokens.
			Prices: map[string]Price{
				"claude-opus-4":    {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
				"claude-opus-4-5":  {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
				"claude-sonnet-4":  {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
				"claude-haiku-4":   {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
				"claude-3-5-haiku": {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
			},
			Transcripts: claudeTranscripts,
			Sandbox: SandboxNeeds{State: []string{"~/.claude", "~/.cache/claude", "~/.local/state/claude", "~/.local/share/claude"},
				StateFiles: []string{"~/.claude.json", "~/.claude.json.backup"},
				APIEnv:     []string{"ANTHROPIC_BASE_URL"}, DefaultAPI: "api.anthropic.com:443"},
			// Its terminal probe after the first frame (deadline 2 s).
			KeysAfter: 2 * time.Second,
			// 2.1.328 refuses a dialog's keys within 150 ms of its draw,
			// 600 ms when the person was typing as it came, and within
			// 150 ms of the process waking from a stall; it also takes the
			// first key on a dialog not wholly in view to scroll it there.
			// Each refusal is silent.
			AnswerAfter: 700 * time.Millisecond,
			AnswerAgain: 2 * time.Second,
			Rules: []Rule{
				{
					Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
					When:    res(`Is this a project you created or one you trust`),
					Prompt:  re(`(Is this a project you created or one you trust\?)`),
					Choice:  re(`^\s*(?:❯\s*)?(No, exit|Yes, I trust this folder)\s*$`),
					Proceed: re(`^Yes, I trust this folder$`),
				},
				{
					Name: "api key", State: api.AgentWaiting, WaitingFor: api.WaitingChoice,
					When:   res(`Do you want to use this API key\?`),
					Prompt: re(`(Do you want to use this API key\?)`),
					Choice: re(`^\s*(?:❯\s*)?(Yes|No \(recommended\))\s*$`),
					// The key the harness's environment gives it: "No" signs
					// in another way, which a harness does not do.
					Proceed: re(`^Yes$`),
				},
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After: re(`Do you want to (?:proceed|make this edit|create|allow|run)`),
					When:  res(`^\s*(?:❯\s*)?1\.\s+Yes`),
					// A command under a dashed rule; an MCP tool under
					// "Tool use" ("harness — Harness List Tool: (MCP)").
					Prompt: re(`^\s*(?:╌{10,}|Tool use\s*$)`), PromptNext: true,
					Choice:  re(`^\s*(?:❯\s*)?\d+\.\s+(.+)$`),
					Proceed: re(`^Yes$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:  res(`(?i)usage limit|limit reached|hit your (?:session |weekly )?limit|API Error.*\b429\b`),
					Until: ParseReset,
				},
				{
					Name: "api error", State: api.AgentError, After: latest, Message: true,
					When:   res(`API Error|Invalid API key|authentication_error`),
					Unless: res(`esc to interrupt`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt`)},
				{Name: "prompt", State: api.AgentReady, When: res(`\? for shortcuts|^❯\s*$`)},
			},
			Argv:       claudeArgv,
			JobResult:  claudeJobResult,
			JobRetry:   claudeJobRetry,
			UsageLimit: usageLimit,
			HasSession: claudeHasSession,
		}
	})
}

// claudeWiring gives Claude Code harness's MCP server with --mcp-config
// (added to the user's .mcp.json and settings servers, which stay as they
// are) and its hooks with --settings (a settings layer of its own: Claude
// Code runs the hooks of every layer, the user's included), both as
// inline JSON arguments: nothing is written to disk.
func claudeWiring(spec WireSpec) (Wiring, error) {
	var w Wiring
	if spec.MCP {
		w.Args = append(w.Args, jsonArg("--mcp-config", map[string]any{
			"mcpServers": map[string]any{ServerName: stdioServer(spec.Exe)},
		}))
	}
	if spec.Hooks {
		hooks := map[string]any{}
		for _, ev := range claudeHookEvents {
			entry := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hookCommand(spec.Exe, ev), "timeout": 10}}}
			if ev == "PreToolUse" || ev == "PostToolUse" || ev == "PermissionRequest" {
				entry["matcher"] = "*"
			}
			hooks[ev] = []any{entry}
		}
		w.Args = append(w.Args, jsonArg("--settings", map[string]any{"hooks": hooks}))
	}
	return w, nil
}

// claudeArgv: `-p PROMPT --output-format stream-json --verbose` for a job
// (stream-json so a run that ends early still says what it did), the
// permission modes "default" (asks) and "auto" (its own mode that runs
// tools without asking; "bypassPermissions" refuses to run as root), and
// --max-turns, which it takes in both modes.
func claudeArgv(o RunOptions) ([]string, error) {
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
		args = append(args, "--permission-mode", "default")
	case ApprovalAuto:
		args = append(args, "--permission-mode", "auto")
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.Job {
		// -p is a switch and the prompt an argument: after "--", so a
		// prompt starting with '-' (a markdown file's "---" front
		// matter) is not taken for an unknown option.
		args = append(args, "--output-format", "stream-json", "--verbose", "-p", "--", o.Prompt)
	}
	return args, nil
}

// claudeJobResult reads the stream-json of `claude -p`: the system init
// line (session, model) and the final result line (text, usage, cost,
// is_error; api_error_status 429 for a usage limit).
func claudeJobResult(out []byte) (JobResult, error) {
	var r JobResult
	found := false
	for _, m := range jsonValues(out) {
		switch str(m, "type") {
		case "system":
			if str(m, "subtype") == "init" {
				r.SessionID, r.Model = str(m, "session_id"), str(m, "model")
			}
		case "result":
			found = true
			if id := str(m, "session_id"); id != "" {
				r.SessionID = id
			}
			r.Result = str(m, "result")
			r.IsError, _ = m["is_error"].(bool)
			u := obj(m, "usage")
			r.Usage = Usage{Input: int64(num(u, "input_tokens")), Output: int64(num(u, "output_tokens")),
				CacheRead: int64(num(u, "cache_read_input_tokens")), CacheWrite: int64(num(u, "cache_creation_input_tokens"))}
			r.CostUSD = num(m, "total_cost_usd")
			r.Limited = r.IsError && (num(m, "api_error_status") == 429 || isUsageLimit(r.Result))
		}
	}
	if !found {
		return r, fmt.Errorf("claude-code: no result line in the job's output")
	}
	return r, nil
}

// claudeJobRetry reads stream-json's api_retry event, which `claude -p`
// writes before each retry of a failed request (2.1.328: attempt,
// max_retries, retry_delay_ms, error_status, error "rate_limit" for a
// 429; no reset time, nor the API's retry-after).
func claudeJobRetry(line []byte) (Retry, bool) {
	if !bytes.Contains(line, []byte(`"api_retry"`)) {
		return Retry{}, false // most lines: no JSON decoding
	}
	var e struct {
		Type       string  `json:"type"`
		Subtype    string  `json:"subtype"`
		Attempt    int     `json:"attempt"`
		MaxRetries int     `json:"max_retries"`
		DelayMS    float64 `json:"retry_delay_ms"`
		Status     int     `json:"error_status"`
	}
	if json.Unmarshal(line, &e) != nil || e.Type != "system" || e.Subtype != "api_retry" {
		return Retry{}, false
	}
	return Retry{Status: e.Status, Attempt: e.Attempt, Max: e.MaxRetries, Delay: time.Duration(e.DelayMS * float64(time.Millisecond))}, true
}

// claudeHasSession: Claude Code keeps a directory's sessions in
// $CLAUDE_CONFIG_DIR (default ~/.claude)/projects/<the path with every
// character but letters and digits as "-">/<session>.jsonl, and refuses
// to start with --continue when there is none.
func claudeHasSession(getenv func(string) string, dir string) bool {
	base := getenv("CLAUDE_CONFIG_DIR")
	if base == "" {
		if getenv("HOME") == "" {
			return false
		}
		base = filepath.Join(getenv("HOME"), ".claude")
	}
	for _, d := range []string{dir, realDir(dir)} {
		munged := strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return '-'
		}, d)
		if m, _ := filepath.Glob(filepath.Join(base, "projects", munged, "*.jsonl")); len(m) > 0 {
			return true
		}
	}
	return false
}

// realDir is dir with symlinks resolved, or dir.
func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// claudeHookEvents are the Claude Code hook events harness listens to.
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest", "Notification", "Stop"}

// claudeHook reads a Claude Code hook call (its payload carries
// session_id and transcript_path on every event): a prompt submitted or a
// tool about to run or done is working, a permission request or a
// permission notification is waiting(permission), the idle notification
// and the end of a turn (Stop) are ready.
func claudeHook(event string, m map[string]any) HookSignal {
	sig := HookSignal{SessionID: str(m, "session_id"), Transcript: str(m, "transcript_path")}
	switch event {
	case "UserPromptSubmit", "PreToolUse", "PostToolUse":
		sig.State = api.AgentWorking
		if event == "PreToolUse" {
			sig.Tool = toolCall(str(m, "tool_name"), m["tool_input"])
		}
	case "PermissionRequest":
		sig.State, sig.WaitingFor = api.AgentWaiting, api.WaitingPermission
		if t := str(m, "tool_name"); t != "" {
			sig.Message = "Claude needs your permission to use " + t
		}
	case "Notification":
		switch str(m, "notification_type") {
		case "permission_prompt":
			sig.State, sig.WaitingFor, sig.Message = api.AgentWaiting, api.WaitingPermission, str(m, "message")
		case "idle_prompt":
			sig.State = api.AgentReady
		}
	case "Stop":
		sig.State = api.AgentReady
	}
	return sig
}

// claudeTranscripts: Claude Code keeps each session as
// HOME/.claude/projects/<workdir, dashed>/<session id>.jsonl, one JSON
// object a line: user and assistant messages (an assistant message
// streamed in blocks is a line per block with the same message id and
// usage), tool results as user lines, each with sessionId and cwd.
var claudeTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".claude", "projects", "*")
		if session != "" {
			if m, _ := filepath.Glob(filepath.Join(dir, session+".jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(filepath.Join(dir, "*.jsonl"), workdir, run)
	},
	Read: readClaudeTranscript,
}

// claudeLine is the part of a Claude Code transcript line harness reads.
type claudeLine struct {
	Type      string    `json:"type"`
	SessionID string    `json:"sessionId"`
	Timestamp time.Time `json:"timestamp"`
	IsAPIErr  bool      `json:"isApiErrorMessage"`
	Message   struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
		Usage   struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// claudeBlock is one content block.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

func readClaudeTranscript(data []byte) Transcript {
	var t Transcript
	usageOf := map[string]Usage{} // by message id: the last line of a message has its final usage
	var order []string
	jsonLines(data, func(b []byte) {
		var l claudeLine
		if json.Unmarshal(b, &l) != nil || (l.Type != "user" && l.Type != "assistant") {
			return
		}
		if l.SessionID != "" {
			t.SessionID = l.SessionID
		}
		var blocks []claudeBlock
		var text string
		if json.Unmarshal(l.Message.Content, &text) != nil {
			_ = json.Unmarshal(l.Message.Content, &blocks)
		}
		if l.Type == "user" {
			results := false
			for _, bl := range blocks {
				switch bl.Type {
				case "tool_result":
					results = true
					outcome := "ok"
					if bl.IsError {
						outcome = "error"
					}
					settle(t.Turns, bl.ToolUseID, outcome)
				case "text":
					text += bl.Text
				}
			}
			if !results || text != "" {
				t.Turns = append(t.Turns, Turn{Time: l.Timestamp, Role: "user", Text: text})
			}
			return
		}
		if l.IsAPIErr {
			for _, bl := range blocks {
				t.LastAPIError = bl.Text
			}
			return
		}
		if l.Message.Model != "" && l.Message.Model != "<synthetic>" {
			t.Model = l.Message.Model
		}
		u := Usage{Input: l.Message.Usage.Input, Output: l.Message.Usage.Output, CacheRead: l.Message.Usage.CacheRead, CacheWrite: l.Message.Usage.CacheWrite}
		id := l.Message.ID
		var turn *Turn
		// The next block of the message the last turn holds (the last
		// id seen; a search of all of them made a long session
		// quadratic).
		if n := len(t.Turns); id != "" && n > 0 && t.Turns[n-1].Role == "assistant" && len(order) > 0 && order[len(order)-1] == id {
			turn = &t.Turns[n-1]
		} else {
			t.Turns = append(t.Turns, Turn{Time: l.Timestamp, Role: "assistant", Model: l.Message.Model})
			turn = &t.Turns[len(t.Turns)-1]
			order = append(order, id)
		}
		if id != "" {
			usageOf[id] = u
		} else {
			usageOf[fmt.Sprint(len(order))] = u
		}
		turn.Usage = u
		turn.Text += text
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				turn.Text += bl.Text
			case "tool_use":
				turn.Tools = append(turn.Tools, ToolCall{ID: bl.ID, Name: bl.Name, Input: string(bl.Input)})
			}
		}
	})
	for _, u := range usageOf {
		addUsage(&t.Usage, u)
	}
	return t
}
