package api

// Kinds of AttachEvent: what an attach stream says besides the program's
// output (docs/design/terminals.md).
const (
	// AttachAttached is the first notice of a stream: the run, the PTY
	// size and the unit's state. The repaint of the current screen follows.
	AttachAttached = "attached"
	// AttachRestarted says a new run of the unit started; its output follows.
	AttachRestarted = "restarted"
	// AttachEnded says the unit stopped or failed (State, Message); it is
	// the last frame of the stream.
	AttachEnded = "ended"
	// AttachNotice is a one-line message for the viewer (input that could
	// not be delivered, say); the stream goes on.
	AttachNotice = "notice"
)

// AttachArgs open an attach stream (`harness attach`): the harness, whether
// the viewer only watches, and the size of the viewer's terminal. A viewer
// that may type resizes the PTY to Cols x Rows when it attaches (the latest
// writer's size wins); a read-only viewer never writes or resizes.
type AttachArgs struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Cols     int    `json:"cols,omitempty"`
	Rows     int    `json:"rows,omitempty"`
	// Masked asks for the screen as `screen` shows it, secrets masked,
	// repainted when it changes, instead of the program's bytes: the
	// dashboard's viewers without the input grant get it.
	Masked bool `json:"masked,omitempty"`
}

// AttachEvent is a notice on an attach stream.
type AttachEvent struct {
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	RunID   uint64 `json:"run_id,omitempty"`
	State   string `json:"state,omitempty"`
	Cols    int    `json:"cols,omitempty"`
	Rows    int    `json:"rows,omitempty"`
	Message string `json:"message,omitempty"`
}

// AttachResize is a viewer's new terminal size.
type AttachResize struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}
