package demoagent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The agent keeps a record of its conversation, as the agent CLIs do, so
// that `harness turns` and the page's Turns section have something to
// read in the demo too: one file of JSON lines per run in
// Options.Sessions, read by the demo adapter (internal/agent/demo.go).
// Its lines:
//
//	{"type":"session","id":ID,"cwd":DIR,"timestamp":T}
//	{"type":"user","timestamp":T,"text":TASK}
//	{"type":"assistant","timestamp":T,"text":SAID,"tool":{"name":"edit_file","input":{"file":F},"outcome":"ok"}}

// SessionsDir is where below HOME the agent keeps its session records,
// unless told otherwise.
const SessionsDir = ".harness-demo/sessions"

// record is one line of the session file.
type record struct {
	Type      string      `json:"type"`
	ID        string      `json:"id,omitempty"`
	Cwd       string      `json:"cwd,omitempty"`
	Timestamp time.Time   `json:"timestamp"`
	Text      string      `json:"text,omitempty"`
	Tool      *toolRecord `json:"tool,omitempty"`
}

// toolRecord is the edit the agent asked to make and how it went: "ok",
// "denied" (the person said No) or "error".
type toolRecord struct {
	Name    string            `json:"name"`
	Input   map[string]string `json:"input"`
	Outcome string            `json:"outcome"`
}

// session is the run's record file; nil when the agent keeps none.
type session struct {
	f *os.File
}

// openSession starts the run's record in dir ("": none).
func openSession(dir, cwd string) (*session, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session record: %w", err)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("session record: %w", err)
	}
	id := hex.EncodeToString(b[:])
	now := time.Now()
	f, err := os.OpenFile(filepath.Join(dir, now.UTC().Format("20060102T150405")+"-"+id+".jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session record: %w", err)
	}
	s := &session{f: f}
	if err := s.write(record{Type: "session", ID: id, Cwd: cwd, Timestamp: now}); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// write appends r as a line.
func (s *session) write(r record) error {
	if s == nil {
		return nil
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("session record: %w", err)
	}
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("session record: %w", err)
	}
	return nil
}

func (s *session) close() {
	if s != nil {
		s.f.Close()
	}
}
