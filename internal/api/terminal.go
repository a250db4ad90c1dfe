package api

import "time"

// Operations of the terminals (docs/design/terminals.md). Each joins Ops together with
// its handler in control's op table.
const (
	OpScreen = "screen" // a harness's rendered screen
	OpWait   = "wait"   // wait until a harness has been idle for a while
	OpSend   = "send"   // type text and keys into a harness's PTY
)

// Activity states of a PTY harness (docs/design/terminals.md).
const (
	ActivityBusy = "busy"
	ActivityIdle = "idle"
)

// ScreenArgs are the arguments of `screen` (CLI: harness screen; MCP:
// harness_screen). With IdleS, the answer waits until the harness has
// been idle that long, bounded by TimeoutS.
type ScreenArgs struct {
	Name       string  `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
	Scrollback int     `json:"scrollback" jsonschema:"also return up to this many scrolled-off lines, oldest first" mcp:"minimum=0,maximum=1000"`
	ANSI       bool    `json:"ansi" jsonschema:"keep colours and attributes as SGR escapes"`
	IdleS      float64 `json:"idle_s" jsonschema:"first wait until it has been quiet this many seconds (at least its idle_after)" mcp:"minimum=0,maximum=86400"`
	TimeoutS   float64 `json:"timeout_s" jsonschema:"with idle_s: wait at most this long (default 30)" mcp:"minimum=0,maximum=86400"`
}

// Cursor is where a terminal's cursor is (0-based) and whether it shows.
type Cursor struct {
	Row     int  `json:"row"`
	Col     int  `json:"col"`
	Visible bool `json:"visible"`
}

// Screen is the answer of `screen`: rows as text with trailing blanks
// trimmed (with ANSI, rows keep their colours as SGR sequences), the
// cursor, the size, the title, whether the program is on the alternate
// screen, the activity state, and up to ScreenArgs.Scrollback lines that
// scrolled off, oldest first.
type Screen struct {
	Name       string     `json:"name"`
	RunID      uint64     `json:"run_id"`
	Cols       int        `json:"cols"`
	Rows       int        `json:"rows"`
	Cursor     Cursor     `json:"cursor"`
	Title      string     `json:"title"`
	AltScreen  bool       `json:"alt_screen"`
	Activity   string     `json:"activity"`
	IdleS      float64    `json:"idle_s"`
	IdleSince  *time.Time `json:"idle_since,omitempty"`
	Lines      []string   `json:"lines"`
	Scrollback []string   `json:"scrollback"`
	// Note says when a wait for idle timed out, or anything else the
	// caller should know about this answer.
	Note string `json:"note,omitempty"`
}

// WaitArgs are the arguments of `wait`: return once the harness has been
// idle for IdleS seconds, or (State, docs/design/agents.md) once its agent is in one
// of the states listed; after TimeoutS either way (TimedOut set).
type WaitArgs struct {
	Name     string       `json:"name"`
	IdleS    float64      `json:"idle_s"`
	State    []AgentState `json:"state,omitempty"`
	TimeoutS float64      `json:"timeout_s"`
}

// WaitResult is the answer of `wait`. A wait for an agent state carries
// the agent's state as it found it (on timeout, the last one).
type WaitResult struct {
	Name     string  `json:"name"`
	IdleS    float64 `json:"idle_s"`
	TimedOut bool    `json:"timed_out"`
	AgentView
}

// SendArgs are the arguments of `send`: literal Text (as a bracketed paste
// when the program enabled it), then named Keys in order, then Enter when
// set.
type SendArgs struct {
	Name  string   `json:"name" jsonschema:"harness name" mcp:"required,minLength=1"`
	Text  string   `json:"text" jsonschema:"literal text (a bracketed paste if the program enabled it); text and keys at most 16 KiB"`
	Keys  []string `json:"keys" jsonschema:"keys typed after the text: Enter, Tab, Esc, Up, Down, Left, Right, Backspace, Space, C-a … C-z"`
	Enter bool     `json:"enter" jsonschema:"press Enter last"`
}

// SendResult is the answer of `send`.
type SendResult struct {
	Name  string `json:"name"`
	RunID uint64 `json:"run_id"`
	Bytes int    `json:"bytes"`
}
