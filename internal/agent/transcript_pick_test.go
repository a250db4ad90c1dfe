package agent

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScenario_EachRunReadsItsOwnTranscript: two runs of one harness left
// two transcripts in the agent's folder for the workdir (each agent's
// real transcript, the second a copy an hour later under another
// session). A run whose session no hook named reads its own: the first
// run the first file although the second is newer, the second (still
// running) the second; a run during which the agent began no file has no
// transcript rather than another run's.
func TestScenario_EachRunReadsItsOwnTranscript(t *testing.T) {
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	for _, c := range []struct {
		agent, session, workdir string
		// file is where the agent keeps session s, under HOME.
		file func(s string) string
	}{
		{ClaudeCode, "e27d7702-9aeb-4e3b-b9c4-6e76f04257c1", "/tmp/TestAgent_DumpTranscriptsclaude-code1649272158/001/work-claude",
			func(s string) string { return filepath.Join(".claude", "projects", "-work-claude", s+".jsonl") }},
		{Codex, "01a233fe-177d-7b11-8953-9a9590f75463", "/tmp/TestAgent_DumpTranscriptscodex4186363056/001/work-codex",
			func(s string) string {
				return filepath.Join(".codex", "sessions", "2026", "12", "01", "rollout-2026-12-01T23-43-39-"+s+".jsonl")
			}},
		{Gemini, "dd75655a-2074-4aae-813c-2fff993b3d62", "/tmp/TestAgent_DumpTranscriptsgemini3381373669/001/work-gemini",
			func(s string) string {
				return filepath.Join(".gemini", "tmp", "work-gemini", "chats", "session-2026-12-01T23-44-"+s[:8]+".jsonl")
			}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "transcripts", c.agent+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			one := string(b)
			var first, last time.Time
			for _, s := range stamp.FindAllString(one, -1) {
				ts, _ := time.Parse(time.RFC3339Nano, s)
				if first.IsZero() || ts.Before(first) {
					first = ts
				}
				if ts.After(last) {
					last = ts
				}
			}
			// The second run: an hour later, another session.
			const later = time.Hour
			second := "0badc0de-1111-4222-8333-444455556666"
			two := stamp.ReplaceAllStringFunc(strings.ReplaceAll(one, c.session, second), func(s string) string {
				ts, _ := time.Parse(time.RFC3339Nano, s)
				return ts.Add(later).Format("2006-01-02T15:04:05.000Z07:00")
			})
			home := t.TempDir()
			for _, f := range []struct {
				session, text string
				mod           time.Time
			}{{c.session, one, last.Add(time.Second)}, {second, two, last.Add(later + time.Second)}} {
				p := filepath.Join(home, c.file(f.session))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f.text), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, f.mod, f.mod); err != nil {
					t.Fatal(err)
				}
			}
			ad := MustLookup(c.agent)
			run1 := RunSpan{Start: first.Add(-5 * time.Second), End: last.Add(5 * time.Second)}
			run2 := RunSpan{Start: first.Add(later - 5*time.Second)} // still running
			for _, r := range []struct {
				what string
				span RunSpan
				want string
			}{{"the first run", run1, c.session}, {"the second run", run2, second}} {
				tr, err := ad.ReadTranscript(home, c.workdir, "", r.span)
				if err != nil || tr.SessionID != r.want || len(tr.Turns) == 0 {
					t.Errorf("%s read %s (session %q, %d turns, %v), want session %s", r.what, tr.Path, tr.SessionID, len(tr.Turns), err, r.want)
				}
			}
			// A run between the two, in which the agent began nothing.
			between := RunSpan{Start: last.Add(10 * time.Minute), End: last.Add(20 * time.Minute)}
			if tr, err := ad.ReadTranscript(home, c.workdir, "", between); !errors.Is(err, ErrNoTranscript) {
				t.Errorf("a run without a transcript read %s (%v), want ErrNoTranscript", tr.Path, err)
			}
			// Another workdir's run at the same time reads neither.
			if tr, err := ad.ReadTranscript(home, "/elsewhere", "", run1); !errors.Is(err, ErrNoTranscript) {
				t.Errorf("another workdir's run read %s (%v)", tr.Path, err)
			}
		})
	}
}

// TestScenario_PickTranscriptByWhenTheRunRan: the rule, on file times
// alone.
func TestScenario_PickTranscriptByWhenTheRunRan(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	run := RunSpan{Start: at(0), End: at(time.Minute)}
	for _, c := range []struct {
		what  string
		files []TranscriptFile
		run   RunSpan
		want  string
	}{
		{"the file begun during the run, not the newer one begun after it", []TranscriptFile{
			{Path: "mine", First: at(5 * time.Second), Mod: at(50 * time.Second)},
			{Path: "later", First: at(2 * time.Minute), Mod: at(3 * time.Minute)},
			{Path: "earlier", First: at(-2 * time.Minute), Mod: at(-time.Minute)},
		}, run, "mine"},
		{"of two begun during the run, the one begun last", []TranscriptFile{
			{Path: "cleared", First: at(5 * time.Second), Mod: at(20 * time.Second)},
			{Path: "new", First: at(30 * time.Second), Mod: at(40 * time.Second)},
		}, run, "new"},
		{"a running run: anything begun since its start", []TranscriptFile{
			{Path: "earlier", First: at(-2 * time.Minute), Mod: at(-time.Minute)},
			{Path: "mine", First: at(2 * time.Hour), Mod: at(3 * time.Hour)},
		}, RunSpan{Start: at(0)}, "mine"},
		{"a conversation resumed from before, written during the run", []TranscriptFile{
			{Path: "resumed", First: at(-time.Hour), Mod: at(30 * time.Second)},
			{Path: "earlier", First: at(-2 * time.Hour), Mod: at(-time.Hour)},
		}, run, "resumed"},
		{"a file with no record time, written during the run", []TranscriptFile{
			{Path: "untimed", Mod: at(61 * time.Second)},
		}, run, "untimed"},
		{"a file begun after the run, never, however it was written", []TranscriptFile{
			{Path: "later", First: at(61 * time.Second), Mod: at(61 * time.Second)},
		}, run, ""},
		{"a file written before the run started, never", []TranscriptFile{
			{Path: "earlier", Mod: at(-time.Millisecond)},
		}, run, ""},
		{"no files", nil, run, ""},
	} {
		if got := PickTranscript(c.files, c.run); got != c.want {
			t.Errorf("%s: picked %q, want %q", c.what, got, c.want)
		}
	}
}
