package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScenario_RunOptionsBecomeEachAgentsOwnFlags: the same options make
// each agent's own argv (docs/design/agents.md), and an option an agent has no flag
// for is ErrUnsupported, not dropped.
func TestScenario_RunOptionsBecomeEachAgentsOwnFlags(t *testing.T) {
	job := RunOptions{Prompt: "review the PRs", Model: "m1", Approval: ApprovalAuto, Job: true}
	cases := []struct {
		agent string
		o     RunOptions
		want  string // the args joined by " "
	}{
		{ClaudeCode, job, "--model m1 --permission-mode auto --output-format stream-json --verbose -p -- review the PRs"},
		{ClaudeCode, RunOptions{Approval: ApprovalAsk, MaxTurns: 7, Continue: true}, "--continue --permission-mode default --max-turns 7"},
		// An interactive run's prompt is typed once the agent is ready: no argument.
		{ClaudeCode, RunOptions{ResumeSession: "s-1", Prompt: "go on"}, "--resume s-1"},
		{ClaudeCode, RunOptions{Prompt: "Make the file"}, ""},
		{Codex, RunOptions{Prompt: "Make the file", Model: "m1"}, `-c model="m1"`},
		{Codex, job, `exec --json --skip-git-repo-check -c model="m1" -c approval_policy="never" -- review the PRs`},
		{Codex, RunOptions{Approval: ApprovalAsk, Continue: true}, `-c approval_policy="on-request" resume --last`},
		{Codex, RunOptions{Job: true, Prompt: "p", ResumeSession: "th-1"}, `exec --json --skip-git-repo-check resume th-1 -- p`},
		{Gemini, job, "--model m1 --approval-mode yolo --output-format json --prompt=review the PRs"},
		{Gemini, RunOptions{Continue: true, Prompt: "hi"}, "--resume latest"},
		{Gemini, RunOptions{ResumeSession: "g-1", Approval: ApprovalAsk}, "--resume g-1 --approval-mode default"},
	}
	for _, c := range cases {
		a := MustLookup(c.agent)
		args, err := a.Args(c.o)
		if err != nil || strings.Join(args, " ") != c.want {
			t.Errorf("%s %+v: %q, %v; want %q", c.agent, c.o, strings.Join(args, " "), err, c.want)
		}
	}
	for _, name := range []string{Codex, Gemini} {
		if _, err := MustLookup(name).Args(RunOptions{MaxTurns: 3}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s max_turns: %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := MustLookup(Generic).Args(RunOptions{Model: "x"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("generic model: %v, want ErrUnsupported", err)
	}
	if args, err := MustLookup(Generic).Args(RunOptions{}); err != nil || args != nil {
		t.Errorf("generic, no options: %v %v", args, err)
	}
}

// TestScenario_JobOutputsOfTheRealAgents reads outputs captured from the
// real programs (testdata/jobs: `claude -p --output-format stream-json`,
// `codex exec --json`, `gemini -p -o json` against internal/agent/modelapi,
// stderr mixed in as a PTY mixes it): an answer with its session, tokens
// and cost, and a scripted usage limit.
func TestScenario_JobOutputsOfTheRealAgents(t *testing.T) {
	cases := []struct {
		agent, file string
		check       func(r JobResult) bool
	}{
		{ClaudeCode, "claude-code-ok.jsonl", func(r JobResult) bool {
			return r.Result == "The answer is 42." && !r.IsError && r.SessionID != "" && r.Model != "" &&
				r.Usage == Usage{Input: 10, Output: 5} && r.CostUSD > 0 && !r.Limited
		}},
		{ClaudeCode, "claude-code-limit.jsonl", func(r JobResult) bool {
			return r.IsError && r.Limited && strings.Contains(r.Result, "resets")
		}},
		{Codex, "codex-ok.jsonl", func(r JobResult) bool {
			return r.Result == "The answer is 42." && r.SessionID != "" && r.Usage == Usage{Input: 10, Output: 5} && !r.Limited
		}},
		{Codex, "codex-limit.jsonl", func(r JobResult) bool {
			return r.IsError && r.Limited && strings.Contains(r.Result, "try again at")
		}},
		{Gemini, "gemini-ok.json", func(r JobResult) bool {
			return r.Result == "The answer is 42." && r.SessionID != "" && r.Usage.Output >= 5 && strings.HasPrefix(r.Model, "gemini-") && !r.Limited
		}},
		{Gemini, "gemini-limit.json", func(r JobResult) bool {
			return r.IsError && r.Limited && r.SessionID != ""
		}},
	}
	for _, c := range cases {
		out, err := os.ReadFile(filepath.Join("testdata", "jobs", c.file))
		if err != nil {
			t.Fatal(err)
		}
		// In a PTY every newline arrives as CRLF.
		out = []byte(strings.ReplaceAll(string(out), "\n", "\r\n"))
		r, err := MustLookup(c.agent).JobResult(out)
		if err != nil || !c.check(r) {
			t.Errorf("%s: %+v, %v", c.file, r, err)
		}
	}
	for _, name := range []string{ClaudeCode, Codex, Gemini} {
		if _, err := MustLookup(name).JobResult([]byte("Error: something broke before any JSON\r\n")); err == nil {
			t.Errorf("%s: no error for output without a result", name)
		}
	}
}

// TestScenario_ClaudeCodeContinuesOnlyWhatExists: Claude Code exits with
// "No conversation found to continue" when there is none, so --continue
// is asked only when its project directory holds a session.
func TestScenario_ClaudeCodeContinuesOnlyWhatExists(t *testing.T) {
	home, work := t.TempDir(), "/srv/my.repo_1"
	env := func(k string) string { return map[string]string{"HOME": home}[k] }
	has := MustLookup(ClaudeCode).HasSession
	if has(env, work) {
		t.Fatal("a session without any")
	}
	dir := filepath.Join(home, ".claude", "projects", "-srv-my-repo-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if has(env, work) {
		t.Fatal("a session in an empty project directory")
	}
	if err := os.WriteFile(filepath.Join(dir, "0b6c.jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !has(env, work) || has(env, "/srv/other") {
		t.Fatal("the session is not found in its own directory only")
	}
	// Usage limits as the job results say them.
	now := time.Date(2026, 12, 1, 23, 13, 30, 0, time.UTC)
	until, ok := MustLookup(ClaudeCode).UsageLimit("API Error: Request rejected (429) · Usage limit reached for your plan · resets 11:14pm", now)
	if !ok || !until.Equal(time.Date(2026, 12, 1, 23, 14, 0, 0, time.UTC)) {
		t.Errorf("until %v %v", until, ok)
	}
	if _, ok := MustLookup(Codex).UsageLimit("stream disconnected", now); ok {
		t.Error("an API error read as a usage limit")
	}
	if !slices.Contains(Names(), Gemini) {
		t.Error("gemini is not registered")
	}
}

// A session id is the agent's own word and goes on its next command line:
// ids as the agents write them pass, an option or anything odd does not.
func TestValidSession(t *testing.T) {
	for _, id := range []string{"8d2f6c1e-3b4a-4c5d-9e8f-0a1b2c3d4e5f", "s-1", "th_1.2", "a"} {
		if !ValidSession(id) {
			t.Errorf("ValidSession(%q) = false", id)
		}
	}
	for _, id := range []string{"", "--dangerously-skip-permissions", "-r", "a b", "a;b", "../x", strings.Repeat("a", 129), "x\n"} {
		if ValidSession(id) {
			t.Errorf("ValidSession(%q) = true", id)
		}
	}
}

// TestScenario_AJobRetryingAUsageLimitIsLimitedWithinMinutes: `claude -p`
// answered 429 with no retry-after (testdata/jobs/claude-code-retrying,
// captured from the real program) retries for over three minutes before
// its result line, and a job with a shorter timeout ends timed out
// without it. Its api_retry lines, read as they come, make the run
// limited once the waits of one request's retries, the one announced
// included, come to a minute: at the seventh attempt (74 s of waits,
// announced about 40 s after the first), not at the first (a per-minute rate
// limit clears by itself), and not only at the end.
func TestScenario_AJobRetryingAUsageLimitIsLimitedWithinMinutes(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "jobs", "claude-code-retrying.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	read := MustLookup(ClaudeCode).JobRetry
	var w RetryWatch
	var retries, trippedAt int
	for _, line := range strings.Split(string(out), "\n") {
		r, ok := read([]byte(line + "\r"))
		if !ok {
			continue
		}
		retries++
		if r.Status != 429 || r.Max != 10 || r.Delay <= 0 {
			t.Errorf("retry %+v", r)
		}
		if w.Limited(r) {
			if trippedAt != 0 {
				t.Errorf("limited again at attempt %d", r.Attempt)
			}
			trippedAt = r.Attempt
		}
	}
	if retries != 10 || trippedAt != 7 {
		t.Errorf("%d retries read, limited at attempt %d; want 10, 7", retries, trippedAt)
	}
	if r, err := MustLookup(ClaudeCode).JobResult(out); err != nil || !r.Limited {
		t.Errorf("the result line: %+v, %v", r, err)
	}

	// Short retries, a new request's, another status: no limit.
	var q RetryWatch
	for _, r := range []Retry{
		{Status: 429, Attempt: 1, Max: 10, Delay: 30 * time.Second}, {Status: 429, Attempt: 2, Max: 10, Delay: 20 * time.Second},
		{Status: 429, Attempt: 1, Max: 10, Delay: 30 * time.Second}, {Status: 529, Attempt: 2, Max: 10, Delay: 40 * time.Second},
		{Status: 429, Attempt: 3, Max: 10, Delay: 40 * time.Second},
	} {
		if q.Limited(r) {
			t.Errorf("limited at %+v", r)
		}
	}
	if !q.Limited(Retry{Status: 429, Attempt: 4, Max: 10, Delay: 20 * time.Second}) {
		t.Error("not limited after a minute of 429 retries")
	}
	if !(&RetryWatch{}).Limited(Retry{Status: 429, Attempt: 3, Max: 3, Delay: time.Second}) {
		t.Error("not limited at the last attempt")
	}
}
