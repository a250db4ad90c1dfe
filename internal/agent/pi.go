package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Pi is pi (@mariozechner/pi-coding-agent on npm, the `pi` command).
const Pi = "pi"

// pi as 0.73.1 draws itself (testdata/pi): its conversation, then an
// input box between two rules of ─, then a footer with the directory and
// "↑10 ↓5 $0.000 0.0%/128k (auto)  MODEL". While it works, the last
// block above the box is a spinner row "⠦ Working...". It runs every
// tool without asking, by design (an extension of the user's may add a
// prompt; none is read here), so it never waits for permission, and it
// has no MCP client, by design too: harness wires nothing into it. A
// failed model request is an "Error: …" block; one it takes for
// transient (a 429 among them) it retries three times, showing
// "⠇ Retrying (2/3) in 4s... (escape to cancel)" under the error.
func init() {
	Register(Pi, func() *Adapter {
		return &Adapter{
			Name:        Pi,
			Commands:    []string{"pi"},
			Transcripts: piTranscripts,
			NoWiring:    "pi has no MCP client, by design: harness's MCP server cannot be given to it",
			Rules: []Rule{
				{
					Name: "usage limit", State: api.AgentLimited, Region: piLastBlocks, Message: true,
					When:  res(`(?i)^\s*Error: .*(?:\b429\b|quota|usage limit|rate.?limit|too many requests)`),
					Until: piUntil,
				},
				{
					Name: "api error", State: api.AgentError, Region: piLastBlocks, Message: true,
					When:   res(`^\s*Error: `),
					Unless: res(`Retrying \(\d+/\d+\)`),
				},
				{Name: "working", State: api.AgentWorking, Region: piLastBlocks, When: res(`^\s*\S?\s*(?:Working|Retrying)\b.*\.\.\.`)},
				{Name: "prompt", State: api.AgentReady, When: res(`\d%/\d+k\b`)},
			},
			Argv:       piArgv,
			JobResult:  piJobResult,
			UsageLimit: usageLimit,
		}
	})
}

// piUntil reads the reset from the error, its rows joined (at 120
// columns "resets" ends one and "11:02am." starts the next), never from
// the retry's countdown under it ("Retrying (2/3) in 4s...").
func piUntil(text string, now time.Time) (time.Time, bool) {
	msg, _, _ := strings.Cut(text, "Retrying (")
	return ParseReset(strings.Join(strings.Fields(msg), " "), now)
}

// piRule is the top and bottom border of pi's input box.
var piRule = regexp.MustCompile(`^─{8,}\s*$`)

// piLastBlocks returns the last block of output above pi's input box
// (rows up to a blank one), and the block above it too when the last is
// a spinner row: the error a retry is for. Nil when no box is drawn.
func piLastBlocks(lines []string) []string {
	borders := 0
	top := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if piRule.MatchString(lines[i]) {
			if borders++; borders == 2 {
				top = i
				break
			}
		}
	}
	if top < 0 {
		return nil
	}
	block := func(end int) int { // the first row of the block ending above end
		for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		start := end
		for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
			start--
		}
		return start
	}
	start := block(top)
	if start < top && piSpinner.MatchString(lines[start]) {
		start = block(start)
	}
	return lines[start:top]
}

// piSpinner is the row pi shows while it works or waits to retry.
var piSpinner = regexp.MustCompile(`^\s*\S\s+(?:Working|Retrying)\b`)

// piArgv: --session ID or --continue, --model; a job is `-p --mode json
// PROMPT`. pi asks before no tool, so approval = "auto" is what it does
// anyway and "ask" is refused; it has no turn bound.
func piArgv(o RunOptions) ([]string, error) {
	if o.MaxTurns > 0 {
		return nil, fmt.Errorf("pi: max_turns: %w", ErrUnsupported)
	}
	if o.Approval == ApprovalAsk {
		return nil, fmt.Errorf("pi asks before no tool (by design), approval = %q: %w", ApprovalAsk, ErrUnsupported)
	}
	var args []string
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
		args = append(args, "--print", "--mode", "json", "--", o.Prompt)
	}
	return args, nil
}

// piJobResult reads `pi -p --mode json`: one event a line, the session
// header first, then agent events; each message_end of the assistant
// carries its usage with the cost pi computed.
func piJobResult(out []byte) (JobResult, error) {
	var r JobResult
	found := false
	for _, m := range jsonValues(out) {
		switch str(m, "type") {
		case "session":
			r.SessionID, found = str(m, "id"), true
		case "message_end":
			msg := obj(m, "message")
			if str(msg, "role") != "assistant" {
				continue
			}
			u, cost := piUsage(msg)
			addUsage(&r.Usage, u)
			r.CostUSD += cost
			if mo := str(msg, "model"); mo != "" {
				r.Model = mo
			}
			if t := piText(msg); t != "" {
				r.Result = t
			}
			if str(msg, "stopReason") == "error" {
				r.IsError, r.Result = true, str(msg, "errorMessage")
				r.Limited = isUsageLimit(r.Result)
				if r.Limited {
					r.Until, _ = ParseReset(r.Result, time.Now())
				}
			} else {
				r.IsError, r.Limited = false, false
			}
		}
	}
	if !found {
		return r, fmt.Errorf("pi: no session header in the job's output")
	}
	return r, nil
}

// piUsage is an assistant message's tokens and what pi says they cost.
func piUsage(msg map[string]any) (Usage, float64) {
	u := obj(msg, "usage")
	return Usage{Input: int64(num(u, "input")), Output: int64(num(u, "output")),
		CacheRead: int64(num(u, "cacheRead")), CacheWrite: int64(num(u, "cacheWrite"))}, num(obj(u, "cost"), "total")
}

// piText joins a message's text blocks (a user message's content may be
// a plain string).
func piText(msg map[string]any) string {
	if s, ok := msg["content"].(string); ok {
		return s
	}
	blocks, _ := msg["content"].([]any)
	var text []string
	for _, b := range blocks {
		if bm, _ := b.(map[string]any); str(bm, "type") == "text" {
			text = append(text, str(bm, "text"))
		}
	}
	return strings.TrimSpace(strings.Join(text, "\n"))
}

// piTranscripts: pi keeps each session as
// HOME/.pi/agent/sessions/--<dir>--/<time>_<session>.jsonl: a session
// header (id, cwd), then entries, the messages among them (user,
// assistant with usage and cost, toolResult). The environment's
// PI_CODING_AGENT_DIR is not known here: a harness that sets it has
// runs without transcripts.
var piTranscripts = &TranscriptSource{
	Find: func(home, workdir, session string, run RunSpan) string {
		dir := filepath.Join(home, ".pi", "agent", "sessions", "*")
		if ValidSession(session) {
			if m, _ := filepath.Glob(filepath.Join(dir, "*_"+session+".jsonl")); len(m) > 0 {
				return m[0]
			}
		}
		return runFile(filepath.Join(dir, "*.jsonl"), workdir, run)
	},
	Read: readPiTranscript,
}

func readPiTranscript(data []byte) Transcript {
	var t Transcript
	jsonLines(data, func(b []byte) {
		var e struct {
			Type      string         `json:"type"`
			ID        string         `json:"id"`
			Timestamp time.Time      `json:"timestamp"`
			Message   map[string]any `json:"message"`
		}
		if json.Unmarshal(b, &e) != nil {
			return
		}
		switch e.Type {
		case "session":
			t.SessionID = e.ID
			return
		case "message":
		default:
			return
		}
		msg := e.Message
		switch str(msg, "role") {
		case "user":
			t.Turns = append(t.Turns, Turn{Time: e.Timestamp, Role: "user", Text: piText(msg)})
		case "assistant":
			u, cost := piUsage(msg)
			turn := Turn{Time: e.Timestamp, Role: "assistant", Text: piText(msg), Model: str(msg, "model"), Usage: u}
			if turn.Model != "" {
				t.Model = turn.Model
			}
			addUsage(&t.Usage, u)
			t.CostUSD += cost
			t.CostKnown = true
			blocks, _ := msg["content"].([]any)
			for _, bl := range blocks {
				bm, _ := bl.(map[string]any)
				if str(bm, "type") == "toolCall" {
					in, _ := json.Marshal(bm["arguments"])
					turn.Tools = append(turn.Tools, ToolCall{ID: str(bm, "id"), Name: str(bm, "name"), Input: string(in)})
				}
			}
			if str(msg, "stopReason") == "error" {
				t.LastAPIError = str(msg, "errorMessage")
			}
			t.Turns = append(t.Turns, turn)
		case "toolResult":
			outcome := "ok"
			if msg["isError"] == true {
				outcome = "error"
			}
			settle(t.Turns, str(msg, "toolCallId"), outcome)
		}
	})
	return t
}
