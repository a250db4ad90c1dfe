package api

import "time"

// Kinds of LogEntry.
const (
	// EntryOutput is a line of the unit's output.
	EntryOutput = "output"
	// EntryEvent is a lifecycle event (spawned, exited, restarting, ...).
	EntryEvent = "event"
)

// LogEntry is one activity entry of a unit (docs/design/runs.md): its ID only grows,
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
	Name     string  `json:"name" jsonschema:"harness name" mcp:"required,minLength=1"`
	Format   string  `json:"format" jsonschema:"summary: activity entries; raw: output bytes" mcp:"enum=summary|raw,default=summary"`
	Cursor   *uint64 `json:"cursor" jsonschema:"summary: entries after this id (the previous next_cursor)" mcp:"minimum=0"`
	Offset   *int64  `json:"offset" jsonschema:"raw: byte offset to start at (the previous next_offset)" mcp:"minimum=0"`
	MaxBytes int     `json:"max_bytes" jsonschema:"answer size cap (default 256 KiB)" mcp:"minimum=1"`
	Lines    int     `json:"lines" jsonschema:"at most this many trailing lines or entries" mcp:"minimum=1"`
	// Run keeps only the entries of that run (summary format).
	Run uint64 `json:"run,omitempty" jsonschema:"summary: only this run's entries (an id from harness_runs)" mcp:"minimum=1"`
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
