package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Gemini CLI (@google/gemini-cli, the `gemini` command), as 0.61.0 draws
// itself (testdata/gemini). Its dialogs are boxes with a ● cursor on
// numbered choices. Trusting a folder restarts it in the same terminal
// without clearing the screen, so the old dialog stays in view above the
// new prompt: rules read from the last occurrence of their question down.
// Its trust answer races its settings reload, which closes the dialog:
// when the reload comes first, the old process draws its prompt, then the
// answer reopens the dialog to say it restarts (folder trust:
// AnswerRestarts); when it comes second, closing the dialog takes the
// message back and cancels the restart, unless it is under way already
// (supervise.RestartGone has the counts).
func init() {
	Register(Gemini, func() *Adapter {
		latest := re(`^ > \S`)
		boxChoice := re(`^[│\s]*(?:●\s*)?\d+\.\s+(.+?)[│\s]*$`)
		return &Adapter{
			Name:        Gemini,
			Commands:    []string{"gemini"},
			Wiring:      geminiWiring,
			Hook:        geminiHook,
			Transcripts: geminiTranscripts,
			Sandbox: SandboxNeeds{State: []string{"~/.gemini"},
				APIEnv: []string{"GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"}, DefaultAPI: "generativelanguage.googleapis.com:443"},
			// Its KeypressProvider enables bracketed paste and attaches its
			// stdin reader in one effect; exit writes 2004l (0.61.0).
			KeysWithPaste: true,
			// An Enter within 40 ms of a paste it does not trust (every
			// paste, unless the terminal speaks the kitty keyboard
			// protocol, which harness's does not) inserts a newline
			// instead of submitting. A timer ends the guard, and its key
			// handler learns of it only when React has rendered again,
			// which shows nothing on screen: on a loaded machine that
			// came more than 250 ms after the paste's draw (2 cores at
			// load 15), so the Enter waits for Gemini's processes to go
			// quiet (the paste handled, its timer set), for the timer to
			// be due, and for them to go quiet again (0.61.0).
			EnterAfterPaste: 50 * time.Millisecond,
			// Even so, on a loaded machine (CI, a resumed session), a
			// prompt was seen left in its input box, the Enter gone into
			// it. An Enter on its empty input does nothing.
			EnterAgain: 3 * time.Second,
			Prices: map[string]Price{
				"gemini-2.5-pro":   {Input: 1.25, Output: 10, CacheRead: 0.31},
				"gemini-2.5-flash": {Input: 0.30, Output: 2.5, CacheRead: 0.075},
			},
			Rules: []Rule{
				{
					Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust, AnswerRestarts: true,
					After:   re(`Do you trust the files in this folder\?`),
					When:    res(`Do you trust the files in this folder\?`, `\d\.\s+Trust folder`),
					Unless:  res(`restarting to apply the trust changes`, `Type your message`),
					Prompt:  re(`(Do you trust the files in this folder\?)`),
					Choice:  boxChoice,
					Proceed: re(`^Trust folder\b`),
				},
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:   re(`^[│\s]*╭─`),
					When:    res(`Allow execution of|Apply this change\?|Allow (?:once|execution)`, `1\.\s+Allow once`),
					Prompt:  re(`^\s*│\s*\?\s+\S+\s+(.+?)[│\s]*$`),
					Choice:  boxChoice,
					Proceed: re(`^Allow once$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:   res(`(?i)usage limit reached|quota exceeded|exceeded your current quota|rate limit`),
					Choice: boxChoice,
					Until:  ParseReset,
				},
				{
					Name: "api error", State: api.AgentError, After: latest, Message: true,
					When:   res(`API Error|✕ .*(?:error|Error)`),
					Unless: res(`esc to cancel`),
				},
				{
					// Between the trust answer and the new process's prompt it
					// is starting, not ready for input. The old process may
					// still draw its own prompt before it exits 250 ms later
					// (keys typed there are lost, seen in CI): Restarts keeps
					// that starting too.
					Name: "restarting", State: api.AgentStarting, Restarts: true,
					After:  re(`restarting to apply the trust changes`),
					Unless: res(`Type your message`, `esc to cancel`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to cancel`)},
				{Name: "prompt", State: api.AgentReady, When: res(`Type your message`)},
			},
			Argv:       geminiArgv,
			JobResult:  geminiJobResult,
			UsageLimit: usageLimit,
		}
	})
}

// geminiSystemSettings is the variable that points Gemini CLI at its
// system settings file, and defaultGeminiSystemSettings where it looks
// without it (Linux).
const (
	geminiSystemSettings        = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
	defaultGeminiSystemSettings = "/etc/gemini-cli/settings.json"
)

// geminiWiring gives Gemini CLI harness's MCP server and its hooks.
// Gemini CLI reads MCP servers and hooks only from settings files, so
// harness writes a system settings file of its own under spec.Dir: the
// user's system settings (if any) plus the harness server and harness's
// hooks, pointed at by GEMINI_CLI_SYSTEM_SETTINGS_PATH for this run.
// Gemini merges mcpServers of all its settings files and concatenates
// their hooks, so the user's own servers and hooks (user and workspace
// settings) stay and run too. Gemini CLI hides variables named like
// tokens from MCP servers and hooks, so HARNESS_MCP_TOKEN is allowed by
// name; its value never enters the file.
//
// Gemini CLI reads a system settings file only when root owns it and every
// directory above it, none writable by group or others: so the wiring
// works for a daemon run by root with its state dir on such a path, and is
// refused (logged, the agent runs unwired) otherwise. It runs the hooks of
// its settings only in a trusted folder (or with folder trust off).
func geminiWiring(spec WireSpec) (Wiring, error) {
	if !spec.MCP && !spec.Hooks || spec.Dir == "" {
		return Wiring{}, nil
	}
	if err := rootOnlyPath(spec.Dir); err != nil {
		return Wiring{}, fmt.Errorf("gemini reads no system settings from %s: %w", spec.Dir, err)
	}
	return geminiSettings(spec)
}

// GeminiSettingsFile is the name of the system settings file harness
// writes for a harness of Gemini CLI, under WireSpec.Dir.
const GeminiSettingsFile = "gemini-system-settings.json"

// geminiHookEvents are the Gemini CLI hook events harness listens to
// (0.61.0: BeforeTool, AfterTool, BeforeAgent, AfterAgent, Notification,
// SessionStart, …; each command gets a JSON payload on stdin with
// session_id, transcript_path and hook_event_name).
var geminiHookEvents = []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification", "AfterAgent"}

// geminiSettings is geminiWiring past the path check.
func geminiSettings(spec WireSpec) (Wiring, error) {
	settings := map[string]any{}
	src := spec.Env[geminiSystemSettings]
	if src == "" {
		src = defaultGeminiSystemSettings
	}
	if spec.ReadFile != nil {
		if b, err := spec.ReadFile(src); err == nil && len(b) > 0 {
			if err := json.Unmarshal(b, &settings); err != nil {
				return Wiring{}, fmt.Errorf("system settings %s: %w", src, err)
			}
		}
	}
	if spec.MCP {
		servers := subMap(settings, "mcpServers")
		servers[ServerName] = map[string]any{"command": spec.Exe, "args": []string{"mcp"}}
	}
	if spec.Hooks {
		hooks := subMap(settings, "hooks")
		for _, ev := range geminiHookEvents {
			entry := map[string]any{"hooks": []any{map[string]any{
				"type": "command", "name": "harness-" + ev, "command": hookCommand(spec.Exe, ev), "timeout": 10000,
			}}}
			if ev == "BeforeTool" || ev == "AfterTool" {
				entry["matcher"] = "*"
			}
			list, _ := hooks[ev].([]any)
			hooks[ev] = append(list, entry)
		}
	}
	redaction := subMap(subMap(settings, "security"), "environmentVariableRedaction")
	allowed, _ := redaction["allowed"].([]any)
	if !slices.Contains(allowed, any("HARNESS_MCP_TOKEN")) {
		allowed = append(allowed, "HARNESS_MCP_TOKEN")
	}
	redaction["allowed"] = allowed
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Wiring{}, err
	}
	path := filepath.Join(spec.Dir, GeminiSettingsFile)
	return Wiring{
		Env:   []string{geminiSystemSettings + "=" + path},
		Files: []File{{Path: path, Data: b}},
	}, nil
}

// subMap is m[k] as an object, made (and put in m) when absent or not
// an object.
func subMap(m map[string]any, k string) map[string]any {
	sub, _ := m[k].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		m[k] = sub
	}
	return sub
}

// geminiHook reads a call of Gemini CLI's hooks (every payload carries
// session_id and transcript_path): a prompt submitted or a tool about to
// run or done is working, a tool permission notification is
// waiting(permission) with the command it asks about, the end of the
// agent's loop ready.
func geminiHook(event string, m map[string]any) HookSignal {
	sig := HookSignal{SessionID: str(m, "session_id"), Transcript: str(m, "transcript_path")}
	switch event {
	case "BeforeAgent", "BeforeTool", "AfterTool":
		sig.State = api.AgentWorking
		if event == "BeforeTool" {
			sig.Tool = toolCall(str(m, "tool_name"), m["tool_input"])
		}
	case "Notification":
		if str(m, "notification_type") == "ToolPermission" {
			sig.State, sig.WaitingFor, sig.Message = api.AgentWaiting, api.WaitingPermission, str(m, "message")
			if cmd := str(obj(m, "details"), "command"); cmd != "" {
				sig.Message = cmd
			}
		}
	case "AfterAgent":
		sig.State = api.AgentReady
	}
	return sig
}

// rootOnlyPath reports why Gemini CLI would not read a settings file in
// dir: dir (made here, 0700, if missing) or a directory above it is not
// root's or is writable by group or others.
func rootOnlyPath(dir string) error {
	if os.Geteuid() != 0 {
		return errors.New("the daemon does not run as root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return fmt.Errorf("%s is not root's", d)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is writable by group or others", d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// geminiArgv: a job is `-p PROMPT -o json`; approvals are its --approval-mode default and yolo; --resume
// takes a session id or "latest" (with none it starts anew with a
// warning, so it needs no HasSession). Its turn bound is a setting
// (model.maxSessionTurns), not a flag.
func geminiArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("gemini: max_turns: %w", ErrUnsupported)
	}
	var args []string
	switch {
	case o.ResumeSession != "":
		args = append(args, "--resume", o.ResumeSession)
	case o.Continue:
		args = append(args, "--resume", "latest")
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
	if o.Job {
		// --prompt=VALUE: as a separate argument, a prompt starting with
		// '-' (a markdown file's "---" front matter) is taken for an
		// option and --prompt has no value.
		args = append(args, "--output-format", "json", "--prompt="+o.Prompt)
	}
	return args, nil
}

// geminiJobResult reads `gemini -p -o json`: one object with session_id,
// response and stats.models.M.tokens, or error (code 429 for a quota).
func geminiJobResult(out []byte) (JobResult, error) {
	var r JobResult
	found := false
	for _, m := range jsonValues(out) {
		if _, ok := m["session_id"]; !ok {
			continue
		}
		found = true
		r.SessionID = str(m, "session_id")
		r.Result = str(m, "response")
		for model, v := range obj(obj(m, "stats"), "models") {
			mv, _ := v.(map[string]any)
			t := obj(mv, "tokens")
			if obj(obj(mv, "roles"), "main") != nil {
				r.Model = model // the conversation's model, not the router's
			}
			r.Usage.Input += int64(num(t, "prompt"))
			r.Usage.Output += int64(num(t, "candidates"))
			r.Usage.CacheRead += int64(num(t, "cached"))
		}
		if e := obj(m, "error"); e != nil {
			r.IsError = true
			r.Result = str(e, "message")
			r.Limited = num(e, "code") == 429 || isUsageLimit(r.Result)
		}
	}
	if !found {
		return r, fmt.Errorf("gemini: no result object in the job's output")
	}
	return r, nil
}

// geminiTranscripts: Gemini CLI keeps each chat as
// HOME/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl: a header line
// (sessionId), then message records by id (a record written again replaces
// the earlier one) and {"$set": …} updates, whose messages are the chat's
// set-up context.
var geminiTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		pattern := filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl")
		if session != "" {
			if m, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*"+session[:min(8, len(session))]+"*.jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(pattern, workdir, run)
	},
	Read: readGeminiTranscript,
}

type geminiRecord struct {
	SessionID string          `json:"sessionId"`
	ID        string          `json:"id"`
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Model     string          `json:"model"`
	Tokens    *struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
		Cached int64 `json:"cached"`
	} `json:"tokens"`
	ToolCalls []struct {
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Args   json.RawMessage `json:"args"`
		Status string          `json:"status"`
	} `json:"toolCalls"`
}

func readGeminiTranscript(data []byte) Transcript {
	var t Transcript
	var order []string
	byID := map[string]geminiRecord{}
	jsonLines(data, func(b []byte) {
		var r geminiRecord
		if json.Unmarshal(b, &r) != nil {
			return
		}
		if r.SessionID != "" {
			t.SessionID = r.SessionID
		}
		if r.ID == "" || (r.Type != "user" && r.Type != "gemini" && r.Type != "error") {
			return
		}
		if _, seen := byID[r.ID]; !seen {
			order = append(order, r.ID)
		}
		byID[r.ID] = r
	})
	for _, id := range order {
		r := byID[id]
		var text string
		if json.Unmarshal(r.Content, &text) != nil {
			var parts []struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(r.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		switch r.Type {
		case "error":
			t.LastAPIError = text
		case "user":
			if text != "" && !strings.HasPrefix(text, "<session_context>") {
				t.Turns = append(t.Turns, Turn{Time: r.Timestamp, Role: "user", Text: text})
			}
		case "gemini":
			turn := Turn{Time: r.Timestamp, Role: "assistant", Text: text, Model: r.Model}
			if r.Model != "" {
				t.Model = r.Model
			}
			if r.Tokens != nil {
				turn.Usage = Usage{Input: r.Tokens.Input - r.Tokens.Cached, Output: r.Tokens.Output, CacheRead: r.Tokens.Cached}
				addUsage(&t.Usage, turn.Usage)
			}
			for _, c := range r.ToolCalls {
				outcome := ""
				switch c.Status {
				case "success":
					outcome = "ok"
				case "error", "cancelled":
					outcome = "error"
				}
				turn.Tools = append(turn.Tools, ToolCall{ID: c.ID, Name: c.Name, Input: string(c.Args), Outcome: outcome})
			}
			t.Turns = append(t.Turns, turn)
		}
	}
	return t
}
