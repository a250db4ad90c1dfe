package api

import "encoding/json"

// OpHook is a call of an agent's hook (`harness hook EVENT`, which the
// agent's hook configuration runs; docs/design/agents.md): the agent tells its own
// state, authenticated by its run's HARNESS_MCP_TOKEN.
const OpHook = "hook"

// MaxHookPayload bounds the payload a hook call may carry: `harness hook`
// refuses a bigger one before it dials, the daemon's adapter again.
const MaxHookPayload = 1 << 20

// HookArgs are the arguments of `hook`.
type HookArgs struct {
	// Event is the agent's hook event ("Stop", "Notification", …).
	Event string `json:"event"`
	// Payload is the JSON the agent gave the hook on stdin.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Token is the run's HARNESS_MCP_TOKEN: it names the harness and run.
	Token string `json:"token"`
}

// HookResult is the answer of `hook`: the harness and run the token
// names, and its agent's state after the call.
type HookResult struct {
	Name  string `json:"name"`
	RunID uint64 `json:"run_id"`
	AgentView
}
