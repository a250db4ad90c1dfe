package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/sqlite"
)

// OpenCode is opencode (opencode-ai on npm, the `opencode` command).
const OpenCode = "opencode"

// opencode as 1.18.33 draws itself (testdata/opencode): a prompt box of
// ┃ rows with "ctrl+p commands" under it while it waits for input and
// "esc interrupt" while it works. Its permission dialog lays its choices
// out on one row ("Allow once   Allow always   Reject") and shows the
// cursor only as a colour, which the screen's text does not carry: it
// opens on the first choice, and Left/Right move it (wrapping). A model
// request that fails, a usage limit too, is retried with the error and
// "[retrying in 1h 58m attempt #1]" on the status row.
func init() {
	Register(OpenCode, func() *Adapter {
		return &Adapter{
			Name:        OpenCode,
			Commands:    []string{"opencode"},
			Wiring:      opencodeWiring,
			Transcripts: opencodeTranscripts,
			Rules: []Rule{
				{
					Name: "permission", State: api.AgentWaiting, WaitingFor: api.WaitingPermission,
					After:   re(`△ Permission required`),
					When:    res(`Allow once\s+Allow always\s+Reject`),
					Prompt:  re(`^\s*┃\s+\$\s+(.+?)\s*$`),
					Choice:  re(`(Allow once|Allow always|Reject)`),
					Inline:  true,
					Keys:    sideways,
					Proceed: re(`^Allow once$`),
				},
				{
					Name: "usage limit", State: api.AgentLimited, Message: true,
					When:  res(`(?i)quota|usage limit|rate.?limit|too many requests|\[retrying in`),
					Until: opencodeUntil,
				},
				{Name: "working", State: api.AgentWorking, When: res(`esc interrupt`)},
				{Name: "prompt", State: api.AgentReady, When: res(`ctrl\+p commands`)},
			},
			Argv:       opencodeArgv,
			JobResult:  opencodeJobResult,
			RunEnv:     opencodeRunEnv,
			UsageLimit: usageLimit,
		}
	})
}

// opencodeUntil reads the reset from the error when its row shows it,
// else from opencode's retry countdown: it waits as long as the
// provider's retry-after says, and a row too narrow for the whole message
// cuts the reset off ("… Usa… [retrying in 1h 58m attempt #1]").
func opencodeUntil(text string, now time.Time) (time.Time, bool) {
	msg, retry, _ := strings.Cut(text, "[retrying in ")
	if t, ok := ParseReset(msg, now); ok {
		return t, true
	}
	if retry == "" {
		return time.Time{}, false
	}
	retry, _, _ = strings.Cut(retry, "attempt")
	t, ok := ParseReset("in "+retry, now)
	if !ok || t.Sub(now) < opencodeOwnBackoff {
		// Without a retry-after opencode backs off by itself, seconds at
		// a time: that countdown says nothing of when the limit resets,
		// and a hold that short let the harness start again at once (seen
		// in CI).
		return time.Time{}, false
	}
	return t, true
}

// opencodeOwnBackoff: a retry countdown shorter than this is opencode's
// own backoff, not a provider's retry-after.
const opencodeOwnBackoff = time.Minute

// sideways answers a dialog whose choices are on one row, moved between
// with Left and Right: from the choice the cursor is on, or, when the
// screen does not say (a colour), from the first, where it opens.
func sideways(target, selected, n int) ([]string, error) {
	if selected < 0 || selected >= n {
		selected = 0
	}
	var keys []string
	for i := selected; i < target; i++ {
		keys = append(keys, "Right")
	}
	for i := selected; i > target; i-- {
		keys = append(keys, "Left")
	}
	return append(keys, "Enter"), nil
}

// opencodeArgv: --model PROVIDER/MODEL, --session ID or --continue; a job
// is `run --format json PROMPT` (run first: it is a subcommand). Its
// approvals are configuration, not flags (opencodeRunEnv); it has no turn
// bound.
func opencodeArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("opencode: max_turns: %w", ErrUnsupported)
	}
	var args []string
	if o.Job {
		args = append(args, "run", "--format", "json")
	}
	switch {
	case o.ResumeSession != "":
		args = append(args, "--session", o.ResumeSession)
	case o.Continue:
		args = append(args, "--continue")
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	if o.Job {
		args = append(args, "--", o.Prompt)
	}
	return args, nil
}

// opencodeRunEnv maps approval onto OPENCODE_PERMISSION, which opencode
// merges over every configuration file it reads: "ask" turns its own
// default (edits and commands run without asking) off.
func opencodeRunEnv(o RunOptions) []string {
	switch o.Approval {
	case ApprovalAsk:
		return []string{`OPENCODE_PERMISSION={"bash":"ask","edit":"ask","webfetch":"ask"}`}
	case ApprovalAuto:
		return []string{`OPENCODE_PERMISSION={"bash":"allow","edit":"allow","webfetch":"allow","external_directory":"allow"}`}
	}
	return nil
}

// opencodeConfigContent is the variable whose JSON opencode merges over
// its configuration files (1.18.33): harness puts its MCP server there,
// over the user's own value of it, so no file of the user's is touched
// and their servers stay.
const opencodeConfigContent = "OPENCODE_CONFIG_CONTENT"

// opencodeWiring adds harness's MCP server as a local server.
func opencodeWiring(spec WireSpec) (Wiring, error) {
	if !spec.MCP {
		return Wiring{}, nil
	}
	cfg := map[string]any{}
	if v := spec.Env[opencodeConfigContent]; v != "" {
		if err := json.Unmarshal([]byte(v), &cfg); err != nil {
			return Wiring{}, fmt.Errorf("%s: %w", opencodeConfigContent, err)
		}
	}
	subMap(cfg, "mcp")[ServerName] = map[string]any{"type": "local", "command": []string{spec.Exe, "mcp"}, "enabled": true}
	b, err := json.Marshal(cfg)
	if err != nil {
		return Wiring{}, err
	}
	return Wiring{Env: []string{opencodeConfigContent + "=" + string(b)}}, nil
}

// opencodeJobResult reads `opencode run --format json`: one event a line,
// each with its sessionID; step_finish parts carry tokens and cost, text
// parts the answer, error events the failure.
func opencodeJobResult(out []byte) (JobResult, error) {
	var r JobResult
	found := false
	for _, m := range jsonValues(out) {
		if s := str(m, "sessionID"); s != "" {
			r.SessionID, found = s, true
		}
		part := obj(m, "part")
		switch str(m, "type") {
		case "text":
			if t := str(part, "text"); t != "" {
				r.Result = t
			}
		case "step_finish":
			t := obj(part, "tokens")
			r.Usage.Input += int64(num(t, "input"))
			r.Usage.Output += int64(num(t, "output"))
			r.Usage.CacheRead += int64(num(obj(t, "cache"), "read"))
			r.Usage.CacheWrite += int64(num(obj(t, "cache"), "write"))
			r.CostUSD += num(part, "cost")
		case "error":
			e := obj(m, "error")
			msg := str(obj(e, "data"), "message")
			if msg == "" {
				msg = str(e, "name")
			}
			r.IsError, r.Result = true, msg
			r.Limited = isUsageLimit(msg)
		}
	}
	if !found {
		return r, fmt.Errorf("opencode: no event with a session in the job's output")
	}
	return r, nil
}

// opencodeTranscripts: opencode keeps every session in one SQLite
// database, HOME/.local/share/opencode/opencode.db (tables session,
// message, part; each row's data a JSON object), read here read-only
// with its WAL, never locked.
var opencodeTranscripts = &TranscriptSource{
	Find: func(home, _, _ string, _ RunSpan) string {
		p := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		return p
	},
	Store: readOpencodeStore,
}

// readOpencodeStore reads the run's session out of the database: session
// when known, else the session of workdir the run wrote last.
func readOpencodeStore(path, workdir, session string, run RunSpan) (Transcript, error) {
	db, err := sqlite.Open(path)
	if err != nil {
		return Transcript{}, err
	}
	if session == "" {
		var best int64
		start := run.Start.UnixMilli()
		err := rows(db, "session", func(get func(string) any) {
			id, _ := get("id").(string)
			dir, _ := get("directory").(string)
			updated, _ := get("time_updated").(int64)
			if dir == workdir && get("parent_id") == nil && updated >= start && updated > best {
				best, session = updated, id
			}
		})
		if err != nil {
			return Transcript{}, err
		}
		if session == "" {
			return Transcript{}, fmt.Errorf("opencode: %w for this run in %s", ErrNoTranscript, path)
		}
	}
	type message struct {
		id   string
		data map[string]any
	}
	var msgs []message
	if err := rows(db, "message", func(get func(string) any) {
		if s, _ := get("session_id").(string); s == session {
			var m map[string]any
			if d, _ := get("data").(string); json.Unmarshal([]byte(d), &m) == nil {
				id, _ := get("id").(string)
				msgs = append(msgs, message{id, m})
			}
		}
	}); err != nil {
		return Transcript{}, err
	}
	parts := map[string][]map[string]any{}
	if err := rows(db, "part", func(get func(string) any) {
		if s, _ := get("session_id").(string); s == session {
			var p map[string]any
			if d, _ := get("data").(string); json.Unmarshal([]byte(d), &p) == nil {
				mid, _ := get("message_id").(string)
				parts[mid] = append(parts[mid], p)
			}
		}
	}); err != nil {
		return Transcript{}, err
	}
	// Rows come in rowid order, which is the order they were written;
	// ids (msg_…) sort by time too.
	t := Transcript{SessionID: session}
	for _, m := range msgs {
		turn := Turn{Role: str(m.data, "role"), Time: time.UnixMilli(int64(num(obj(m.data, "time"), "created")))}
		var text []string
		for _, p := range parts[m.id] {
			switch str(p, "type") {
			case "text":
				text = append(text, str(p, "text"))
			case "tool":
				st := obj(p, "state")
				in, _ := json.Marshal(st["input"])
				outcome := ""
				switch str(st, "status") {
				case "completed":
					outcome = "ok"
				case "error":
					outcome = "error"
				}
				turn.Tools = append(turn.Tools, ToolCall{ID: str(p, "callID"), Name: str(p, "tool"), Input: string(in), Outcome: outcome})
			}
		}
		turn.Text = strings.Join(text, "\n")
		if turn.Role == "assistant" {
			turn.Model = str(m.data, "modelID")
			if turn.Model != "" {
				t.Model = turn.Model
			}
			tk := obj(m.data, "tokens")
			turn.Usage = Usage{Input: int64(num(tk, "input")), Output: int64(num(tk, "output")),
				CacheRead: int64(num(obj(tk, "cache"), "read")), CacheWrite: int64(num(obj(tk, "cache"), "write"))}
			addUsage(&t.Usage, turn.Usage)
			if e := obj(m.data, "error"); e != nil {
				t.LastAPIError = str(obj(e, "data"), "message")
				if t.LastAPIError == "" {
					t.LastAPIError = str(e, "name")
				}
			}
		}
		if turn.Role == "user" || turn.Role == "assistant" {
			t.Turns = append(t.Turns, turn)
		}
	}
	return t, nil
}

// rows calls fn with each row of table, its columns by name.
func rows(db *sqlite.DB, table string, fn func(get func(string) any)) error {
	names, err := db.Columns(table)
	if err != nil {
		return err
	}
	return db.Rows(table, func(c []any) bool {
		fn(func(name string) any {
			if i := slices.Index(names, name); i >= 0 && i < len(c) {
				return c[i]
			}
			return nil
		})
		return true
	})
}
