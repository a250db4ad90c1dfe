package api

import "time"

// Kinds of LogEntry.
const (
	// EntryOutput is a line of the unit's output.
	EntryOutput = "output"
	// EntryEvent is a lifecycle event (spawned, exited, restarting, ...).
	EntryEvent = "event"
)

// LogEntry is one activity entry of a unit (DESIGN §6): its ID only grows,
// also across daemon restarts, so a poller's cursor stays valid.
type LogEntry struct {
	ID    uint64    `json:"id"`
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	RunID uint64    `json:"run_id"`
	Text  string    `json:"text"`
}

// Formats of `logs`.
const (
	LogsSummaryFormat = "summary"
	LogsRawFormat     = "raw"
)

// LogsArgs are the arguments of `logs`, in the CLI's words.
type LogsArgs struct {
	Name     string  `json:"name"`
	Format   string  `json:"format"`
	Cursor   *uint64 `json:"cursor"`
	Offset   *int64  `json:"offset"`
	MaxBytes int     `json:"max_bytes"`
	Lines    int     `json:"lines"`
}

// LogsSummary is the summary answer of `logs`: activity entries.
type LogsSummary struct {
	Format     string     `json:"format"`
	Entries    []LogEntry `json:"entries"`
	NextCursor uint64     `json:"next_cursor"`
	Truncated  bool       `json:"truncated"`
	Note       string     `json:"note"`
}

// LogsRaw is the raw answer of `logs`: a window of the byte ring.
type LogsRaw struct {
	Format     string `json:"format"`
	Text       string `json:"text"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Truncated  bool   `json:"truncated"`
	Note       string `json:"note"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
}
