package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestScenario_TranscriptsOfRealAgents reads the session files the real
// Claude Code, Codex and Gemini CLI wrote for the same scripted exchange
// (testdata/transcripts, captured against internal/agent/modelapi: a first
// answer with 111 input, 22 output, 33 cache-read and 44 cache-write
// tokens, then a shell command approved and run, then "Made it."): each
// gives its session, model, token totals and the turns with the tool call
// and its outcome.
func TestScenario_TranscriptsOfRealAgents(t *testing.T) {
	for _, c := range []struct {
		agent, session, model string
		usage                 Usage
		tool                  string
	}{
		// Claude Code logs each request's own usage; Codex and Gemini fold
		// cache writes into input (Codex) or do not report them (Gemini).
		{ClaudeCode, "e27d7702-9aeb-4e3b-b9c4-6e76f04257c1", "claude-opus-5-5", Usage{Input: 131, Output: 32, CacheRead: 33, CacheWrite: 44}, "Bash"},
		{Codex, "01a233fe-177d-7b11-8953-9a9590f75463", "gpt-5", Usage{Input: 131, Output: 32, CacheRead: 33}, "exec_command"},
		{Gemini, "dd75655a-2074-4aae-813c-2fff993b3d62", "gemini-3.8-flash", Usage{Input: 131, Output: 32, CacheRead: 33}, "run_shell_command"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			tr, err := MustLookup(c.agent).ReadTranscriptFile(filepath.Join("testdata", "transcripts", c.agent+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if tr.SessionID != c.session || tr.Model != c.model || tr.Usage != c.usage {
				t.Errorf("session %q model %q usage %+v; want %q %q %+v", tr.SessionID, tr.Model, tr.Usage, c.session, c.model, c.usage)
			}
			var roles, texts []string
			var tools []ToolCall
			for _, turn := range tr.Turns {
				roles = append(roles, turn.Role)
				texts = append(texts, turn.Text)
				tools = append(tools, turn.Tools...)
			}
			joined := strings.Join(texts, "|")
			for _, want := range []string{"Say something", "First answer.", "Make the file", "Made it."} {
				if !strings.Contains(joined, want) {
					t.Errorf("turns %q lack %q", joined, want)
				}
			}
			if roles[0] != "user" || len(tools) != 1 || tools[0].Name != c.tool || tools[0].Outcome != "ok" || !strings.Contains(tools[0].Input, "touch made-by-agent") {
				t.Errorf("roles %v tools %+v", roles, tools)
			}
		})
	}
}

// TestScenario_AHugeOrMissingTranscriptIsBounded: a transcript over the
// read bound is read from its tail (a partial first line skipped), and a
// missing one is an error, not a stall.
func TestScenario_AHugeOrMissingTranscriptIsBounded(t *testing.T) {
	old := MaxTranscriptRead
	MaxTranscriptRead = 4 << 10
	t.Cleanup(func() { MaxTranscriptRead = old })
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	var b strings.Builder
	for range 200 {
		b.WriteString(`{"type":"user","sessionId":"s","message":{"role":"user","content":"old old old old"}}` + "\n")
	}
	b.WriteString(`{"type":"user","sessionId":"s","message":{"role":"user","content":"newest"}}` + "\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := MustLookup(ClaudeCode).ReadTranscriptFile(p)
	if err != nil || !tr.Truncated || len(tr.Turns) == 0 || tr.Turns[len(tr.Turns)-1].Text != "newest" || len(tr.Turns) > 60 {
		t.Fatalf("truncated read: %v, %+v turns %d", err, tr.Truncated, len(tr.Turns))
	}
	if _, err := MustLookup(ClaudeCode).ReadTranscript(dir, "/nowhere", "", RunSpan{Start: time.Now()}); err == nil {
		t.Error("a missing transcript was found")
	}
	if _, err := MustLookup(Generic).ReadTranscript(dir, "/nowhere", "", RunSpan{Start: time.Now()}); err == nil {
		t.Error("generic has a transcript")
	}
}

// TestScenario_ATranscriptPathThatIsNotAFileIsRefusedAtOnce: a hook's
// payload names the transcript, so it may name a FIFO (whose open waits
// for a writer) or a device that never ends; neither is read.
func TestScenario_ATranscriptPathThatIsNotAFileIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", t.TempDir()} {
		done := make(chan error, 1)
		go func() {
			_, err := MustLookup(ClaudeCode).ReadTranscriptFile(p)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNoTranscript) {
				t.Errorf("%s: %v, want ErrNoTranscript", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("reading %s as a transcript blocks", p)
		}
	}
}
