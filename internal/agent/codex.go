package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/harness-dev/harness/internal/api"
)

// Codex (@openai/codex, the `codex` command), as 0.169.0 draws itself
// (testdata/codex). Its input row starts with › and shows the placeholder
// "Ask Codex to do anything" while empty; submitted prompts keep the ›.
// While it streams an answer it shows no status line, so working is the
// busy/idle floor there.
func init() {
	Register(Codex, func() *Adapter {
		// The last submitted prompt: a › row that is not the empty input's
		// placeholder (RE2 has no look-ahead).
		latest := re(`^› (?:[^A]|A[^s]|As[^k])`)
		return &Adapter{
			Name:        Codex,
			Commands:    []string{"codex"},
			Wiring:      codexWiring,
			Hook:        codexHook,
			Transcripts: codexTranscripts,
			Sandbox: SandboxNeeds{State: []string{"~/.codex"},
				APIEnv: []string{"OPENAI_BASE_URL"}, DefaultAPI: "api.openai.com:443"},
			Prices: map[string]Price{
				"gpt-5": {Input: 1.25, Output: 10, CacheRead: 0.125},
			},
			Rules: []Rule{
				{
					Name: "folder trust", State: api.AgentWaiting, WaitingFor: api.WaitingTrust,
					After:  re(`Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)`),
					When:   res(`\d\.\s+(?:Yes|Trust)`),
					Prompt: re(`(Do you trust the (?:files|contents) (?:in|of) this (?:folder|directory)\??)`),
					Choice: re(`^\s*(?:[›>]\s*)?\d+\.\s+(.+?)\s*$`),
				},
				{
					Name: "sign in", State: api.AgentWaiting, WaitingFor: api.WaitingLogin,
					After:  re(`Welcome to Codex|Sign in with ChatGPT`),
					When:   res(`\d\.\s+Sign in with ChatGPT`),
					Prompt: re(`(Choose how you want to use Codex\.?)`),
					Choice: re(`^\s*(?:[›>]\s*)?\d+\.\s+(.+?)\s*$`),
				},
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:   re(`Would you like to (?:run the following command|make the following edits|grant)`),
					When:    res(`^\s*(?:›\s*)?1\.\s+Yes`),
					Prompt:  re(`^\s*\$ (.+)$`),
					Choice:  re(`^\s*(?:›\s*)?\d+\.\s+(.+?)\s*$`),
					Proceed: re(`^Yes, proceed\b`),
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc to interrupt`)},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:  res(`(?i)usage limit|hit your limit|rate limit`),
					Until: ParseReset,
				},
				{
					Name: "api error", State: api.AgentError, After: latest, Message: true,
					When: res(`(?i)^\s*■ .*(?:error|unexpected status|unauthorized|stream disconnected)`),
				},
			},
			Argv:       codexArgv,
			JobResult:  codexJobResult,
			UsageLimit: usageLimit,
			HasSession: codexHasSession,
		}
	})
}

// codexWiring gives Codex harness's MCP server and its notify hook with
// -c config overrides, which apply to this run on top of the user's
// config.toml and leave it as it is. Codex starts an MCP server with a
// short list of its own environment only, so the server is told which
// variables to pass on.
//
// Codex 0.169 has two hook mechanisms. Its hooks ([hooks] tables) run only
// once the user has trusted each one in its /hooks review (or under
// --dangerously-bypass-hook-trust, which would run the user's untrusted
// hooks too), so harness does not use them. Its notify program runs with
// no review at the end of every turn (agent-turn-complete, its JSON as the
// last argument): `harness hook notify JSON`. An override replaces the
// user's own notify, so it is added only when no config file Codex would
// read for this run, and no -c of the harness's args, sets notify
// (codexUserNotify).
func codexWiring(spec WireSpec) (Wiring, error) {
	var w Wiring
	if spec.MCP {
		key := "mcp_servers." + ServerName + "."
		w.Args = append(w.Args,
			"-c", key+"command="+tomlString(spec.Exe),
			"-c", key+`args=["mcp"]`,
			"-c", key+`env_vars=["HARNESS_MCP_TOKEN", "HARNESS_SOCKET", "HARNESS_NAME"]`,
		)
	}
	if spec.Hooks && !codexUserNotify(spec) {
		w.Args = append(w.Args, "-c", "notify=["+tomlString(spec.Exe)+`, "hook", "`+codexNotify+`"]`)
	}
	return w, nil
}

// codexNotify is the event harness's notify program is called with.
const codexNotify = "notify"

// codexUserNotify reports whether the user has a notify program Codex
// would run for this harness: in CODEX_HOME's config.toml (top level or a
// profile) or a profile file beside it (NAME.config.toml), the system's
// /etc/codex/config.toml, a project's .codex/config.toml in the workdir
// or a folder above it, or a -c/--config of the harness's args. A file
// that does not parse counts as setting it: harness cannot tell.
func codexUserNotify(spec WireSpec) bool {
	for i, a := range spec.Args {
		v, ok := strings.CutPrefix(a, "--config=")
		if !ok && (a == "-c" || a == "--config") && i+1 < len(spec.Args) {
			v, ok = spec.Args[i+1], true
		}
		if !ok {
			v, ok = strings.CutPrefix(a, "-c")
		}
		if ok && strings.HasPrefix(strings.TrimSpace(v), "notify") {
			return true
		}
	}
	if spec.ReadFile == nil {
		return false
	}
	home := codexHome(spec)
	files := []string{"/etc/codex/config.toml"}
	if home != "" {
		files = append(files, filepath.Join(home, "config.toml"))
		profiles, _ := filepath.Glob(filepath.Join(home, "*.config.toml"))
		files = append(files, profiles...)
	}
	if spec.Workdir != "" {
		for d := filepath.Clean(spec.Workdir); ; d = filepath.Dir(d) {
			files = append(files, filepath.Join(d, ".codex", "config.toml"))
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	for _, f := range files {
		b, err := spec.ReadFile(f)
		if err != nil {
			continue
		}
		var cfg map[string]any
		if _, err := toml.Decode(string(b), &cfg); err != nil {
			return true
		}
		if _, set := cfg["notify"]; set {
			return true
		}
		profiles, _ := cfg["profiles"].(map[string]any)
		for _, p := range profiles {
			if pm, _ := p.(map[string]any); pm != nil && pm["notify"] != nil {
				return true
			}
		}
	}
	return false
}

// codexHome is the CODEX_HOME of a run: the harness's env, the daemon's,
// else HOME/.codex.
func codexHome(spec WireSpec) string {
	if h := spec.Env["CODEX_HOME"]; h != "" {
		return h
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	if spec.Home != "" {
		return filepath.Join(spec.Home, ".codex")
	}
	return ""
}

// codexHook reads a call of harness's notify program: an
// agent-turn-complete payload (thread-id, turn-id, cwd, input-messages,
// last-assistant-message) is the end of a turn, ready. Its thread-id is
// not taken for the session: Codex 0.169's `resume` does not know it ("No
// saved session found with ID …", seen when a restart came between the
// notify and the transcript read), while the rollout's session_meta id,
// which the transcript read after this call puts on the run, resumes.
// The turn's tool calls are in the transcript only (TranscriptTools).
func codexHook(event string, m map[string]any) HookSignal {
	var sig HookSignal
	if event != codexNotify {
		return sig
	}
	if str(m, "type") == "agent-turn-complete" {
		sig.State, sig.TranscriptTools = api.AgentReady, true
	}
	return sig
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// codexArgv: a job is `exec --json --skip-git-repo-check … PROMPT`, a
// resume the `resume ID|--last` subcommand (of exec for a job). Model and
// approval go as -c overrides, which may repeat, so they never clash with
// the user's own -m or -a. Codex has no turn bound.
func codexArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("codex: max_turns: %w", ErrUnsupported)
	}
	var args []string
	if o.Job {
		args = append(args, "exec", "--json", "--skip-git-repo-check")
	}
	if o.Model != "" {
		args = append(args, "-c", "model="+strconv.Quote(o.Model))
	}
	switch o.Approval {
	case ApprovalAsk:
		args = append(args, "-c", `approval_policy="on-request"`)
	case ApprovalAuto:
		args = append(args, "-c", `approval_policy="never"`)
	}
	switch {
	case o.ResumeSession != "":
		args = append(args, "resume", o.ResumeSession)
	case o.Continue:
		args = append(args, "resume", "--last")
	}
	if o.Job && o.Prompt != "" {
		args = append(args, "--", o.Prompt)
	}
	return args, nil
}

// codexJobResult reads `codex exec --json`: thread.started (the session),
// the last agent_message item (the result), turn.completed (usage; summed
// over turns) and turn.failed / error (a usage limit among them).
func codexJobResult(out []byte) (JobResult, error) {
	var r JobResult
	ended := false
	for _, m := range jsonValues(out) {
		switch str(m, "type") {
		case "thread.started":
			r.SessionID = str(m, "thread_id")
		case "item.completed":
			if it := obj(m, "item"); str(it, "type") == "agent_message" {
				r.Result = str(it, "text")
			}
		case "turn.completed":
			ended = true
			u := obj(m, "usage")
			r.Usage.Input += int64(num(u, "input_tokens"))
			r.Usage.Output += int64(num(u, "output_tokens"))
			r.Usage.CacheRead += int64(num(u, "cached_input_tokens"))
			r.Usage.CacheWrite += int64(num(u, "cache_write_input_tokens"))
		case "turn.failed":
			ended = true
			r.IsError = true
			r.Result = str(obj(m, "error"), "message")
			r.Limited = isUsageLimit(r.Result)
		}
	}
	if !ended {
		return r, fmt.Errorf("codex: no turn.completed or turn.failed in the job's output")
	}
	return r, nil
}

// codexHasSession: Codex keeps sessions under $CODEX_HOME (default
// ~/.codex)/sessions/YYYY/MM/DD/rollout-….jsonl.
func codexHasSession(getenv func(string) string, _ string) bool {
	base := getenv("CODEX_HOME")
	if base == "" {
		if getenv("HOME") == "" {
			return false
		}
		base = filepath.Join(getenv("HOME"), ".codex")
	}
	m, _ := filepath.Glob(filepath.Join(base, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return len(m) > 0
}

// codexTranscripts: Codex keeps each session as a rollout file,
// HOME/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl, one
// JSON object a line: session_meta (id, cwd), turn_context (model),
// response_item (messages, function calls and their output) and event_msg
// (token_count with the running totals, errors).
var codexTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		pattern := filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*.jsonl")
		if session != "" {
			if m, _ := filepath.Glob(filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*"+session+".jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(pattern, workdir, run)
	},
	Read: readCodexTranscript,
}

type codexLine struct {
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Payload   struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Model     string          `json:"model"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Arguments string          `json:"arguments"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
		Message   string          `json:"message"`
		Info      *struct {
			Total struct {
				Input      int64 `json:"input_tokens"`
				Cached     int64 `json:"cached_input_tokens"`
				CacheWrite int64 `json:"cache_write_input_tokens"`
				Output     int64 `json:"output_tokens"`
			} `json:"total_token_usage"`
			Last struct {
				Input      int64 `json:"input_tokens"`
				Cached     int64 `json:"cached_input_tokens"`
				CacheWrite int64 `json:"cache_write_input_tokens"`
				Output     int64 `json:"output_tokens"`
			} `json:"last_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

func readCodexTranscript(data []byte) Transcript {
	var t Transcript
	jsonLines(data, func(b []byte) {
		var l codexLine
		if json.Unmarshal(b, &l) != nil {
			return
		}
		p := &l.Payload
		switch l.Type {
		case "session_meta":
			t.SessionID = p.ID
		case "turn_context":
			if p.Model != "" {
				t.Model = p.Model
			}
		case "event_msg":
			switch p.Type {
			case "token_count":
				if p.Info != nil {
					tot := p.Info.Total
					t.Usage = Usage{Input: tot.Input - tot.Cached, Output: tot.Output, CacheRead: tot.Cached, CacheWrite: tot.CacheWrite}
					last := p.Info.Last
					for i := len(t.Turns) - 1; i >= 0; i-- {
						if t.Turns[i].Role == "assistant" {
							t.Turns[i].Usage = Usage{Input: last.Input - last.Cached, Output: last.Output, CacheRead: last.Cached, CacheWrite: last.CacheWrite}
							break
						}
					}
				}
			case "error", "stream_error":
				t.LastAPIError = p.Message
			}
		case "response_item":
			switch p.Type {
			case "message":
				var parts []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(p.Content, &parts)
				var text string
				for _, c := range parts {
					text += c.Text
				}
				switch {
				case p.Role == "assistant":
					t.Turns = append(t.Turns, Turn{Time: l.Timestamp, Role: "assistant", Text: text, Model: t.Model})
				case p.Role == "user" && !strings.HasPrefix(strings.TrimSpace(text), "<"):
					// Codex's own context (<environment_context>, …) is not the user's.
					t.Turns = append(t.Turns, Turn{Time: l.Timestamp, Role: "user", Text: text})
				}
			case "function_call", "custom_tool_call":
				name := p.Name
				if p.Namespace != "" {
					name = p.Namespace + "__" + p.Name
				}
				n := len(t.Turns)
				if n == 0 || t.Turns[n-1].Role != "assistant" {
					t.Turns = append(t.Turns, Turn{Time: l.Timestamp, Role: "assistant", Model: t.Model})
					n++
				}
				t.Turns[n-1].Tools = append(t.Turns[n-1].Tools, ToolCall{ID: p.CallID, Name: name, Input: p.Arguments})
			case "function_call_output", "custom_tool_call_output":
				settle(t.Turns, p.CallID, codexOutcome(p.Output))
			}
		}
	})
	return t
}

// codexOutcome reads a function call's output: a command that exited
// non-zero, or a call that was refused, is an error.
func codexOutcome(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) != nil {
		s = string(out)
	}
	const exited = "exited with code "
	if i := strings.Index(s, exited); i >= 0 {
		rest := s[i+len(exited):]
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(rest)
		}
		if rest[:end] != "0" {
			return "error"
		}
	}
	if strings.Contains(s, "rejected by user") || strings.Contains(s, "declined") {
		return "error"
	}
	return "ok"
}
