package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Cline is the Cline CLI (cline on npm, a native binary: the `cline`
// command).
const Cline = "cline"

// Cline as 3.0.65 draws itself (testdata/cline): the conversation, each
// prompt a " ❯ " row and each answer a " * " row, then its input box
// ("❯ Ask anything...") between two rules and a footer with "○ Plan ●
// Act (Tab)". While it works a braille spinner leads the row it writes
// (the answer streaming, a tool running, "Thinking... (esc to cancel)").
// Its permission dialog, "Approve tool call? … $ COMMAND … [y] Approve
// [n] Deny", takes the choice's letter. A model request that fails is
// retried six times with nothing shown but the spinner (for two minutes
// when the provider names no retry-after), then "* Error: MESSAGE". It
// approves every tool unless told not to (--auto-approve false). It
// starts a detached `cline --cline-hub-daemon` (its own session) that
// outlives it: what harness owns of a run ends with it (docs/agents.md).
func init() {
	Register(Cline, func() *Adapter {
		latest := re(`^ ❯ \S`)
		return &Adapter{
			Name:        Cline,
			Commands:    []string{"cline"},
			Wiring:      clineWiring,
			Transcripts: clineTranscripts,
			HasSession:  func(func(string) string, string) bool { return false },
			// An Enter in the same write as a bracketed paste is not
			// taken for a submit (3.0.65: the prompt stayed in its
			// input box); written apart, once it drew the paste, it is.
			EnterAfterPaste: 50 * time.Millisecond,
			// Even so, under load an Enter written apart was seen lost (the
			// prompt left in its input box, seen once in ten story runs).
			// An Enter on its empty input does nothing (3.0.65).
			EnterAgain: 3 * time.Second,
			Rules: []Rule{
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:   re(`Approve tool call\?`),
					When:    res(`\[y\] Approve\s+\[n\] Deny`),
					Prompt:  re(`^\s*\$\s+(.+?)\s*$`),
					Choice:  re(`\[[yn]\]\s+(Approve|Deny)`),
					Inline:  true,
					Keys:    clineKeys,
					Proceed: re(`^Approve$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, After: latest, Message: true,
					When:  res(`(?i)^\s*\* Error: .*(?:quota|usage limit|rate.?limit|too many requests|\b429\b)`),
					Until: clineUntil,
				},
				{Name: "api error", State: api.AgentError, After: latest, Message: true, When: res(`^\s*\* Error: `)},
				{Name: "working", State: api.AgentWorking, After: latest, When: res(`^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]\s|esc to cancel`)},
				// Its empty input box shows one of three placeholders (the
				// first screen's, Act's or Plan's). With text in it, it is
				// still ready (a floor's working there, the program busy
				// with a paste, would count as a turn begun), but a send's
				// Enter that left it so was lost (Adapter.EnterAgain).
				{Name: "prompt", State: api.AgentReady, When: res(`Plan .*Act \(Tab\)`, `^\s*❯ (?:Ask anything\.\.\.|Plan something\.\.\.|What can I do for you\?)\s*$`)},
				{Name: "typed", State: api.AgentReady, Typed: true, When: res(`Plan .*Act \(Tab\)`)},
			},
			Argv:       clineArgv,
			JobResult:  clineJobResult,
			UsageLimit: usageLimit,
		}
	})
}

// clineKeys answers the permission dialog with the letter of the choice
// (Approve, then Deny, as the screen shows them).
func clineKeys(target, _, n int) ([]string, error) {
	if n != 2 {
		return nil, fmt.Errorf("%w: cline's dialog offers two choices, the screen shows %d", ErrNoChoice, n)
	}
	return []string{[]string{"y", "n"}[target]}, nil
}

// clineUntil reads the reset from the error's rows, broken anywhere by
// the screen's width (at 120 columns "resets 11:" ends one row and
// "06am." starts the next): joined as words, else as one word.
func clineUntil(text string, now time.Time) (time.Time, bool) {
	rows := strings.Split(text, "\n")
	for i := range rows {
		rows[i] = strings.TrimSpace(rows[i])
	}
	for _, sep := range []string{" ", ""} {
		if t, ok := ParseReset(strings.Join(rows, sep), now); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// clineArgv: --id SESSION, --model, --auto-approve false|true for
// approval (its default approves every tool); a job is `--json PROMPT`.
// Cline has no flag that continues the last session: resume = true
// continues the session a run's transcript named (--id), and a run with
// none known starts a new conversation (HasSession is false, so Continue
// is never asked; alone it adds nothing). It has no turn bound.
func clineArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("cline: max_turns: %w", ErrUnsupported)
	}
	var args []string
	if o.ResumeSession != "" {
		args = append(args, "--id", o.ResumeSession)
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	switch o.Approval {
	case ApprovalAsk:
		args = append(args, "--auto-approve", "false")
	case ApprovalAuto:
		args = append(args, "--auto-approve", "true")
	}
	if o.Job {
		args = append(args, "--json", "--", o.Prompt)
	}
	return args, nil
}

// clineJobResult reads `cline --json PROMPT` (3.0.65): one event a line,
// ending with a run_result (finishReason, text, usage with the cost,
// model; a failure's finishReason is "error" and its text the message),
// or run_aborted; stderr has the failure again as an error event. Its
// output names no session: the run's session comes from its transcript.
func clineJobResult(out []byte) (JobResult, error) {
	var r JobResult
	found := false
	for _, m := range jsonValues(out) {
		switch str(m, "type") {
		case "run_result":
			found = true
			r.Result, r.Model = str(m, "text"), str(obj(m, "model"), "id")
			u := obj(m, "usage")
			r.Usage = Usage{Input: int64(num(u, "inputTokens")), Output: int64(num(u, "outputTokens")),
				CacheRead: int64(num(u, "cacheReadTokens")), CacheWrite: int64(num(u, "cacheWriteTokens"))}
			r.CostUSD = num(u, "totalCost")
			if f := str(m, "finishReason"); f != "completed" {
				r.IsError = true
				if r.Result == "" {
					r.Result = "finished: " + f
				}
			}
		case "run_aborted", "error":
			found, r.IsError = true, true
			if msg := str(m, "message"); msg != "" {
				r.Result = msg
			}
		}
	}
	if !found {
		return r, fmt.Errorf("cline: no run_result in the job's output")
	}
	if r.IsError {
		r.Limited = isUsageLimit(r.Result)
		if r.Limited {
			r.Until, _ = ParseReset(r.Result, time.Now())
		}
	}
	return r, nil
}

// ClineMCPFile is the name of the MCP settings file harness writes for a
// harness of Cline, under WireSpec.Dir.
const ClineMCPFile = "cline_mcp_settings.json"

// clineMCPSettings is the variable that points Cline at its MCP settings
// file (3.0.65).
const clineMCPSettings = "CLINE_MCP_SETTINGS_PATH"

// clineWiring gives Cline harness's MCP server in an MCP settings file of
// harness's own: the user's servers (their cline_mcp_settings.json) plus
// harness's, pointed at by CLINE_MCP_SETTINGS_PATH for this run. Servers
// the user adds from inside such a run go into harness's copy.
func clineWiring(spec WireSpec) (Wiring, error) {
	if !spec.MCP || spec.Dir == "" {
		return Wiring{}, nil
	}
	settings := map[string]any{}
	if src := clineUserMCP(spec); src != "" && spec.ReadFile != nil {
		if b, err := spec.ReadFile(src); err == nil && len(b) > 0 {
			if err := json.Unmarshal(b, &settings); err != nil {
				return Wiring{}, fmt.Errorf("MCP settings %s: %w", src, err)
			}
		}
	}
	subMap(settings, "mcpServers")[ServerName] = map[string]any{
		"transport": map[string]any{"type": "stdio", "command": spec.Exe, "args": []string{"mcp"}},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Wiring{}, err
	}
	path := filepath.Join(spec.Dir, ClineMCPFile)
	return Wiring{Env: []string{clineMCPSettings + "=" + path}, Files: []File{{Path: path, Data: b}}}, nil
}

// clineUserMCP is where the run's Cline would read its MCP settings
// without harness: CLINE_MCP_SETTINGS_PATH, else under CLINE_DATA_DIR,
// else CLINE_DIR/data, else HOME/.cline/data. "" when none is known.
func clineUserMCP(spec WireSpec) string {
	switch {
	case spec.Env[clineMCPSettings] != "":
		return spec.Env[clineMCPSettings]
	case spec.Env["CLINE_DATA_DIR"] != "":
		return filepath.Join(spec.Env["CLINE_DATA_DIR"], "settings", ClineMCPFile)
	case spec.Env["CLINE_DIR"] != "":
		return filepath.Join(spec.Env["CLINE_DIR"], "data", "settings", ClineMCPFile)
	case spec.Home != "":
		return filepath.Join(spec.Home, ".cline", "data", "settings", ClineMCPFile)
	}
	return ""
}

// clineTranscripts: Cline keeps each session as
// HOME/.cline/data/sessions/<session>/<session>.json (its cwd, model and
// usage with the cost Cline computed) beside <session>.messages.json
// (the messages, each assistant one with its tokens; an error it showed
// is an assistant message marked displayRole "error").
var clineTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".cline", "data", "sessions")
		if ValidSession(session) {
			p := filepath.Join(dir, session, session+".json")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return clineRunSession(dir, workdir, run)
	},
	Store: readClineSession,
}

// clineRunSession picks the run's session (PickTranscript) among the
// metadata files under dir whose cwd is workdir, each begun at its
// started_at.
func clineRunSession(dir, workdir string, run RunSpan) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	var files []TranscriptFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || strings.HasSuffix(p, ".messages.json") || fi.ModTime().Before(run.Start.Add(-time.Second)) {
			continue
		}
		var meta struct {
			Cwd       string    `json:"cwd"`
			StartedAt time.Time `json:"started_at"`
		}
		if json.Unmarshal(fileHead(p), &meta) != nil || meta.Cwd != workdir {
			continue
		}
		files = append(files, TranscriptFile{Path: p, First: meta.StartedAt, Mod: fi.ModTime()})
	}
	return PickTranscript(files, run)
}

// readClineSession reads the session whose metadata file is path and
// its messages beside it (never the messages_path the file names).
func readClineSession(path, _, _ string, _ RunSpan) (Transcript, error) {
	var meta struct {
		SessionID string `json:"session_id"`
		Model     string `json:"model"`
		Metadata  struct {
			Usage *struct {
				TotalCost float64 `json:"totalCost"`
			} `json:"usage"`
		} `json:"metadata"`
	}
	b, _, err := readTail(path, MaxTranscriptRead)
	if err != nil {
		return Transcript{}, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return Transcript{}, fmt.Errorf("cline session %s: %w", path, err)
	}
	t := Transcript{SessionID: meta.SessionID, Model: meta.Model}
	if u := meta.Metadata.Usage; u != nil && u.TotalCost > 0 {
		// 0 is also what Cline says of a model it has no price for.
		t.CostUSD, t.CostKnown = u.TotalCost, true
	}
	mb, truncated, err := readTail(strings.TrimSuffix(path, ".json")+".messages.json", MaxTranscriptRead)
	if err != nil {
		return t, nil // a session that has no message yet
	}
	t.Truncated = truncated
	var msgs struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(mb, &msgs); err != nil {
		return t, fmt.Errorf("cline session %s: messages: %w", path, err)
	}
	for _, m := range msgs.Messages {
		at := time.UnixMilli(int64(num(m, "ts")))
		blocks, _ := m["content"].([]any)
		var text []string
		turn := Turn{Time: at, Role: str(m, "role")}
		for _, bl := range blocks {
			bm, _ := bl.(map[string]any)
			switch str(bm, "type") {
			case "text":
				text = append(text, clineUserText(str(bm, "text")))
			case "tool_use":
				in, _ := json.Marshal(bm["input"])
				turn.Tools = append(turn.Tools, ToolCall{ID: str(bm, "id"), Name: str(bm, "name"), Input: string(in)})
			case "tool_result":
				outcome := "ok"
				if res, _ := bm["content"].([]any); len(res) > 0 {
					if rm, _ := res[0].(map[string]any); rm["success"] == false {
						outcome = "error"
					}
				}
				settle(t.Turns, str(bm, "tool_use_id"), outcome)
			}
		}
		turn.Text = strings.TrimSpace(strings.Join(text, "\n"))
		if str(obj(m, "metadata"), "displayRole") == "error" {
			t.LastAPIError = turn.Text
			continue
		}
		if turn.Role == "user" && turn.Text == "" {
			continue // tool results only
		}
		if turn.Role == "assistant" {
			mt := obj(m, "metrics")
			turn.Usage = Usage{Input: int64(num(mt, "inputTokens")), Output: int64(num(mt, "outputTokens")),
				CacheRead: int64(num(mt, "cacheReadTokens")), CacheWrite: int64(num(mt, "cacheWriteTokens"))}
			turn.Model = str(obj(m, "modelInfo"), "id")
			addUsage(&t.Usage, turn.Usage)
		}
		t.Turns = append(t.Turns, turn)
	}
	return t, nil
}

// clineUserText is a prompt without the tag Cline wraps it in
// (<user_input mode="act">…</user_input>).
func clineUserText(s string) string {
	if !strings.HasPrefix(s, "<user_input") {
		return s
	}
	if i := strings.IndexByte(s, '>'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(s, "</user_input>")
}
