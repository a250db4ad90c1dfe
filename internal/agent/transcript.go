package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Transcript is what an agent's own session record says about a run
// (docs/design/agents.md): its session, model, tokens, turns with their tool calls,
// and the last API error it logged.
type Transcript struct {
	SessionID string
	Model     string
	Usage     Usage
	Turns     []Turn
	// LastAPIError is the last error the agent logged for a model request.
	LastAPIError string
	// CostUSD is what the session cost as the agent's records say, when
	// CostKnown (TranscriptCost).
	CostUSD   float64
	CostKnown bool
	// Path is the file read; Truncated says only its tail was read.
	Path      string
	Truncated bool
}

// Turn is one message of the conversation.
type Turn struct {
	Time  time.Time
	Role  string // "user" or "assistant"
	Text  string
	Model string
	Usage Usage
	Tools []ToolCall
}

// ToolCall is one tool call of an assistant turn and how it went.
type ToolCall struct {
	ID    string
	Name  string
	Input string // its arguments, as JSON
	// Outcome is "ok", "error", or "" while no result was logged.
	Outcome string
}

// GuardKey is the call as the loop guard compares it (docs/design/agents.md): its
// name and its input, as a hook names a call about to run.
func (tc ToolCall) GuardKey() string {
	switch {
	case tc.Input == "":
		return toolCall(tc.Name, nil)
	case json.Valid([]byte(tc.Input)):
		return toolCall(tc.Name, json.RawMessage(tc.Input))
	}
	return toolCall(tc.Name, tc.Input)
}

// TranscriptSource says how an agent keeps its session records: where to
// find a run's file and how to read it. One per adapter that has them.
type TranscriptSource struct {
	// Find returns the transcript file of a run of the agent that ran in
	// workdir with home as its HOME during run: the session's own file
	// when session is known (from a hook), else the run's own file among
	// the agent's files for workdir (runFile). "" when none is the run's.
	Find func(home, workdir, session string, run RunSpan) string
	// Read parses a transcript; data may start mid-file (a bounded read
	// of a huge file keeps its tail), so a reader skips what it cannot
	// parse.
	Read func(data []byte) Transcript
	// Store, when set, reads the run's session out of the file Find
	// returned instead of Read: a store of every session (opencode's
	// SQLite database) rather than a file per session. session is the
	// run's session when known; else the one of workdir the run wrote.
	Store func(path, workdir, session string, run RunSpan) (Transcript, error)
}

// MaxTranscriptRead bounds how much of a transcript file is read: a huge
// file is read from its last MaxTranscriptRead bytes.
var MaxTranscriptRead int64 = 16 << 20

// ErrNoTranscript: the agent has no transcript for the run (yet).
var ErrNoTranscript = errors.New("no transcript")

// ReadTranscript finds and reads the transcript of a run of the agent.
func (a *Adapter) ReadTranscript(home, workdir, session string, run RunSpan) (Transcript, error) {
	if a.Transcripts == nil {
		return Transcript{}, fmt.Errorf("agent %s keeps no transcripts harness reads: %w", a.Name, ErrNoTranscript)
	}
	path := a.Transcripts.Find(home, workdir, session, run)
	if path == "" {
		return Transcript{}, fmt.Errorf("agent %s: %w for this run under %s", a.Name, ErrNoTranscript, home)
	}
	if a.Transcripts.Store != nil {
		t, err := a.Transcripts.Store(path, workdir, session, run)
		if err != nil {
			return Transcript{}, fmt.Errorf("agent %s: transcript: %w", a.Name, err)
		}
		t.Path = path
		return t, nil
	}
	data, truncated, err := readTail(path, MaxTranscriptRead)
	if err != nil {
		return Transcript{}, fmt.Errorf("agent %s: transcript: %w", a.Name, err)
	}
	t := a.Transcripts.Read(data)
	t.Path, t.Truncated = path, truncated
	if t.SessionID == "" {
		t.SessionID = session
	}
	return t, nil
}

// ReadTranscriptFile reads the transcript at path (a hook named it).
func (a *Adapter) ReadTranscriptFile(path string) (Transcript, error) {
	if a.Transcripts == nil {
		return Transcript{}, fmt.Errorf("agent %s keeps no transcripts harness reads: %w", a.Name, ErrNoTranscript)
	}
	if a.Transcripts.Store != nil {
		return Transcript{}, fmt.Errorf("agent %s keeps its sessions in one store, read by session: %w", a.Name, ErrNoTranscript)
	}
	data, truncated, err := readTail(path, MaxTranscriptRead)
	if err != nil {
		return Transcript{}, fmt.Errorf("agent %s: transcript: %w", a.Name, err)
	}
	t := a.Transcripts.Read(data)
	t.Path, t.Truncated = path, truncated
	return t, nil
}

// readTail reads path, or its last max bytes from a line start. Only a
// regular file is read: a hook's payload names the path, and a FIFO or a
// device there would block the reader (and the daemon's shutdown, which
// waits for it) or never end; O_NONBLOCK keeps even the open of a FIFO
// from waiting for a writer.
func readTail(path string, max int64) ([]byte, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file: %w", path, ErrNoTranscript)
	}
	if fi.Size() <= max {
		b, err := io.ReadAll(io.LimitReader(f, max))
		return b, false, err
	}
	if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
		return nil, false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b, true, err
}

// jsonLines calls f with each non-empty line of data.
func jsonLines(data []byte, f func(line []byte)) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), int(MaxTranscriptRead))
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			f(l)
		}
	}
}

// RunSpan is when a run ran: End is zero while it runs.
type RunSpan struct {
	Start, End time.Time
}

// TranscriptFile is what picking a run's transcript knows of one file.
type TranscriptFile struct {
	Path string
	// First is the time of the file's first record that has one: when
	// the agent began the conversation. Zero when no record says.
	First time.Time
	// Mod is the file's modification time.
	Mod time.Time
}

// modSlack is how long after a run's end its agent's last write may
// still be stamped on the file (the file system's clock, a write queued
// at exit).
const modSlack = 2 * time.Second

// PickTranscript returns which of an agent's transcript files (all for
// the run's workdir) is the run's own, "" when none is: a folder holds
// every run's files, and the newest is another run's as soon as a later
// run began one. A file is the run's when its first record falls within
// the run (the agent began that conversation then; of several, the
// newest, as the agent began it last); failing that, when the file was
// written during the run without being begun after it (a conversation
// resumed from before, or a file whose records carry no time); of
// several, the newest written.
func PickTranscript(files []TranscriptFile, run RunSpan) string {
	start := run.Start.Truncate(time.Millisecond) // records carry milliseconds
	within := func(t time.Time, slack time.Duration) bool {
		return !t.Before(start) && (run.End.IsZero() || !t.After(run.End.Add(slack)))
	}
	best, bestT := "", time.Time{}
	for _, f := range files {
		if !f.First.IsZero() && within(f.First, 0) && (best == "" || f.First.After(bestT)) {
			best, bestT = f.Path, f.First
		}
	}
	if best != "" {
		return best
	}
	for _, f := range files {
		begunAfter := !f.First.IsZero() && !run.End.IsZero() && f.First.After(run.End)
		if !begunAfter && within(f.Mod, modSlack) && (best == "" || f.Mod.After(bestT)) {
			best, bestT = f.Path, f.Mod
		}
	}
	return best
}

// runFile returns the run's own file (PickTranscript) among the files
// matching pattern whose head mentions workdir.
func runFile(pattern, workdir string, run RunSpan) string {
	paths, _ := filepath.Glob(pattern)
	var files []TranscriptFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		// A file last written before the run began is no run's of this
		// span under either rule of PickTranscript (a record within the
		// run, or a write within it); skipping it unread keeps a folder of
		// thousands of old sessions from costing 256 KiB each per look.
		// (A second of slack for coarse file times.)
		if fi.ModTime().Before(run.Start.Add(-time.Second)) {
			continue
		}
		head := fileHead(p)
		if q, _ := json.Marshal(workdir); !bytes.Contains(head, q[1:len(q)-1]) {
			continue
		}
		files = append(files, TranscriptFile{Path: p, First: firstRecordTime(head), Mod: fi.ModTime()})
	}
	return PickTranscript(files, run)
}

// headSize is how much of a transcript's head is read to tell whose it
// is: its first records name the workdir and carry its first time.
const headSize = 256 << 10

// fileHead returns the first headSize bytes of the file at path (none
// when it cannot be read). Only a regular file is opened without
// blocking (readTail).
func fileHead(path string) []byte {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, headSize)
	n, _ := io.ReadFull(f, head)
	return head[:n]
}

// firstRecordTime is the time of the first record in head that has one:
// a top-level "timestamp" (Claude Code, Codex) or "startTime" (Gemini
// CLI's header). Zero when none does.
func firstRecordTime(head []byte) time.Time {
	var first time.Time
	jsonLines(head, func(b []byte) {
		if !first.IsZero() {
			return
		}
		var r struct {
			Timestamp string `json:"timestamp"`
			StartTime string `json:"startTime"`
		}
		if json.Unmarshal(b, &r) != nil {
			return
		}
		for _, s := range []string{r.Timestamp, r.StartTime} {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				first = t
				return
			}
		}
	})
	return first
}

// addUsage sums token counts into u.
func addUsage(u *Usage, v Usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
}

// settle marks the outcome of tool call id in turns.
func settle(turns []Turn, id, outcome string) {
	for i := len(turns) - 1; i >= 0; i-- {
		if j := slices.IndexFunc(turns[i].Tools, func(c ToolCall) bool { return c.ID == id }); j >= 0 {
			turns[i].Tools[j].Outcome = outcome
			return
		}
	}
}
