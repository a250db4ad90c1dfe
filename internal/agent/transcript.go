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
// (DESIGN §16): its session, model, tokens, turns with their tool calls,
// and the last API error it logged.
type Transcript struct {
	SessionID string
	Model     string
	Usage     Usage
	Turns     []Turn
	// LastAPIError is the last error the agent logged for a model request.
	LastAPIError string
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

// GuardKey is the call as the loop guard compares it (DESIGN §17): its
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
	// workdir with home as its HOME, started at started: the session's
	// own file when session is known (from a hook), else the newest of the
	// agent's files for workdir changed since started. "" when none.
	Find func(home, workdir, session string, started time.Time) string
	// Read parses a transcript; data may start mid-file (a bounded read
	// of a huge file keeps its tail), so a reader skips what it cannot
	// parse.
	Read func(data []byte) Transcript
}

// MaxTranscriptRead bounds how much of a transcript file is read: a huge
// file is read from its last MaxTranscriptRead bytes.
var MaxTranscriptRead int64 = 16 << 20

// ErrNoTranscript: the agent has no transcript for the run (yet).
var ErrNoTranscript = errors.New("no transcript")

// ReadTranscript finds and reads the transcript of a run of the agent.
func (a *Adapter) ReadTranscript(home, workdir, session string, started time.Time) (Transcript, error) {
	if a.Transcripts == nil {
		return Transcript{}, fmt.Errorf("agent %s keeps no transcripts harness reads: %w", a.Name, ErrNoTranscript)
	}
	path := a.Transcripts.Find(home, workdir, session, started)
	if path == "" {
		return Transcript{}, fmt.Errorf("agent %s: %w for this run under %s", a.Name, ErrNoTranscript, home)
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

// newestFile returns the most recently modified of the files matching
// pattern that changed at or after since and satisfy ok (nil: any).
func newestFile(pattern string, since time.Time, ok func(path string) bool) string {
	paths, _ := filepath.Glob(pattern)
	best, bestT := "", time.Time{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.ModTime().Before(since.Add(-2*time.Second)) {
			continue
		}
		if ok != nil && !ok(p) {
			continue
		}
		if fi.ModTime().After(bestT) {
			best, bestT = p, fi.ModTime()
		}
	}
	return best
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
