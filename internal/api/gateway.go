package api

import "time"

// A gateway you can trust (docs/gateway.md): pinned upstream tools and
// rate limits. `harness mcp pins KEY` and `harness mcp approve KEY
// [TOOL]` are operator operations with no facade tool: an agent must not
// approve the tools it is about to be handed.
const (
	OpMCPPins    = "mcp_pins"
	OpMCPApprove = "mcp_approve"
)

// PinMode is an upstream's pin = "off" | "changes" | "strict".
type PinMode string

// The pin modes; "" reads as PinChanges, the default.
const (
	// PinOff records and checks nothing.
	PinOff PinMode = "off"
	// PinChanges pins every tool when first listed and quarantines one
	// that changes afterwards.
	PinChanges PinMode = "changes"
	// PinStrict also holds back a tool that appears after the first
	// listing, until approved.
	PinStrict PinMode = "strict"
)

// Valid reports whether m is a pin mode ("" is the default).
func (m PinMode) Valid() bool { return m == "" || m == PinOff || m == PinChanges || m == PinStrict }

// Rate is a rate limit: calls per second and the burst a full bucket
// holds. The zero Rate limits nothing.
type Rate struct {
	PerSecond float64
	Burst     int
}

// The states of a tool in `mcp_pins`.
const (
	PinPinned  = "pinned"  // listed as approved
	PinChanged = "changed" // quarantined: differs from its pin
	PinNew     = "new"     // held: appeared after the first listing (strict)
)

// MCPPinsArgs are the arguments of `mcp_pins`.
type MCPPinsArgs struct {
	// Key is the upstream's KEY, or PROJECT/KEY for a project's.
	Key string `json:"key"`
	// Diff adds each changed field's pinned and current text.
	Diff bool `json:"diff,omitempty"`
}

// MCPApproveArgs are the arguments of `mcp_approve`.
type MCPApproveArgs struct {
	Key string `json:"key"`
	// Tool is the upstream's own tool name; "" approves every held tool.
	Tool string `json:"tool,omitempty"`
}

// ToolPin is one tool of an upstream's pin set, as `mcp_pins` shows it.
type ToolPin struct {
	// Tool is the upstream's own name for it.
	Tool  string `json:"tool"`
	State string `json:"state"`
	// Hash is the pinned hash ("sha256:..."); Current the listed one
	// when it differs.
	Hash     string    `json:"hash,omitempty"`
	Current  string    `json:"current,omitempty"`
	PinnedAt time.Time `json:"pinned_at,omitzero"`
	// Changed names what differs from the pin: description, title,
	// inputSchema, outputSchema, annotations.
	Changed []string `json:"changed,omitempty"`
	// Diff (with diff) is each changed field, pinned and current.
	Diff []FieldDiff `json:"diff,omitempty"`
}

// FieldDiff is one field of a changed tool: its pinned and current text
// (schemas and annotations as canonical JSON).
type FieldDiff struct {
	Field   string `json:"field"`
	Pinned  string `json:"pinned"`
	Current string `json:"current"`
}

// MCPPinsResult answers `mcp_pins`.
type MCPPinsResult struct {
	Key  string    `json:"key"`
	Mode PinMode   `json:"mode"`
	Pins []ToolPin `json:"pins"`
	// Warning says the pins file was unreadable and set aside.
	Warning string `json:"warning,omitempty"`
}

// MCPApproveResult answers `mcp_approve`: the tools approved now.
type MCPApproveResult struct {
	Key      string   `json:"key"`
	Approved []string `json:"approved"`
}
