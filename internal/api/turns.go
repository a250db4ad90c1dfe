package api

import "time"

// OpTurns reads the conversation of a harness's agent from the agent's own
// transcript (docs/design/agents.md): `harness turns NAME [RUN]`, harness_turns.
const OpTurns = "turns"

// TurnsArgs are the arguments of `turns`.
type TurnsArgs struct {
	Name string `json:"name" jsonschema:"harness name (project/name for project harnesses)" mcp:"required,minLength=1"`
	// Run is a run id; 0 takes the current run, else the last one.
	Run uint64 `json:"run,omitempty" jsonschema:"run id (default: the current run, else the last one)" mcp:"minimum=0"`
	// Limit keeps the newest turns (default DefaultTurns).
	Limit int `json:"limit,omitempty" jsonschema:"at most this many turns, the newest (default 50)" mcp:"minimum=1"`
}

// DefaultTurns is how many turns `turns` answers without a limit.
const DefaultTurns = 50

// MaxTurnText bounds each turn's text in an answer: an excerpt, not the
// document.
const MaxTurnText = 2000

// TurnsResult is the answer of `turns`: what the agent's transcript says
// about the run, every text masked like the rest of what the daemon shows.
type TurnsResult struct {
	Name      string `json:"name"`
	RunID     uint64 `json:"run_id"`
	Agent     string `json:"agent"`
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	// Tokens are the run's totals.
	Tokens Tokens `json:"tokens"`
	// CostUSD is priced by the agent's price table; absent when the model
	// has no price there.
	CostUSD      *float64   `json:"cost_usd,omitempty"`
	LastAPIError string     `json:"last_api_error,omitempty"`
	Turns        []TurnInfo `json:"turns"`
	// Omitted counts the older turns left out by limit.
	Omitted int `json:"omitted,omitempty"`
	// Truncated says the transcript was too big to read whole: only its
	// tail was read.
	Truncated bool `json:"truncated,omitempty"`
}

// TurnInfo is one message of the conversation.
type TurnInfo struct {
	Time      *time.Time     `json:"time,omitempty"`
	Role      string         `json:"role"` // user | assistant
	Text      string         `json:"text,omitempty"`
	Model     string         `json:"model,omitempty"`
	Tokens    *Tokens        `json:"tokens,omitempty"`
	ToolCalls []ToolCallInfo `json:"tool_calls,omitempty"`
}

// ToolCallInfo is one tool call of a turn.
type ToolCallInfo struct {
	Name string `json:"name"`
	// Input is the call's arguments as JSON, clipped to MaxTurnText.
	Input string `json:"input,omitempty"`
	// Outcome is ok, error, or absent while the agent logged no result.
	Outcome string `json:"outcome,omitempty"`
}
