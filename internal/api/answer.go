package api

// OpAnswer picks a choice of a waiting agent's prompt (docs/design/agents.md).
const OpAnswer = "answer"

// AnswerArgs are the arguments of `answer` (CLI: harness answer NAME
// CHOICE; MCP: harness_answer): the choice by its text as the screen
// shows it, or its number (1 for the first).
type AnswerArgs struct {
	Name   string `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
	Choice string `json:"choice" jsonschema:"one of the prompt's choices, by its text or its number (1 for the first)" mcp:"required,minLength=1"`
	// PromptID, when set, answers only that prompt (AgentView.PromptID):
	// once the agent is on another one, even one that looks the same, the
	// answer is not_waiting and nothing is typed.
	PromptID uint64 `json:"prompt_id,omitempty" jsonschema:"answer only the prompt with this prompt_id (from harness_list); another prompt on screen: not_waiting"`
}

// AnswerResult is the answer of `answer`: the choice picked, the keys
// typed for it, and the agent's state after (once it left the prompt, or
// as it is after a short wait).
type AnswerResult struct {
	Name  string `json:"name"`
	RunID uint64 `json:"run_id"`
	// Choice is the picked choice's text; Number its place (1-based).
	Choice string `json:"choice"`
	Number int    `json:"number"`
	// Prompt is the prompt that was answered.
	Prompt string `json:"prompt"`
	// Keys are the keys typed, by send's names.
	Keys []string `json:"keys"`
	// After is the agent's state after the answer.
	After AgentView `json:"after"`
}
