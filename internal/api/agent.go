package api

import "time"

// AgentState is what the agent of a running harness is doing (docs/design/agents.md),
// beside its lifecycle state.
type AgentState string

// The agent states.
const (
	// AgentStarting: the run has shown no first screen yet.
	AgentStarting AgentState = "starting"
	// AgentWorking: thinking, streaming or running a tool.
	AgentWorking AgentState = "working"
	// AgentWaiting: it needs a human (WaitingFor, Prompt, Choices).
	AgentWaiting AgentState = "waiting"
	// AgentReady: at its input prompt, its turn done.
	AgentReady AgentState = "ready"
	// AgentLimited: a usage or rate limit; Until when the agent says.
	AgentLimited AgentState = "limited"
	// AgentError: an API or auth error it shows.
	AgentError AgentState = "error"
)

// AgentStates lists every agent state, in the order above.
func AgentStates() []AgentState {
	return []AgentState{AgentStarting, AgentWorking, AgentWaiting, AgentReady, AgentLimited, AgentError}
}

// Valid reports whether s is one of the agent states.
func (s AgentState) Valid() bool {
	for _, k := range AgentStates() {
		if s == k {
			return true
		}
	}
	return false
}

// WaitingFor says what a waiting agent needs.
type WaitingFor string

// What a waiting agent can need.
const (
	WaitingPermission WaitingFor = "permission" // to run a tool (a shell command, an edit)
	WaitingQuestion   WaitingFor = "question"   // an answer to a question it asked
	WaitingTrust      WaitingFor = "trust"      // to trust the folder it runs in
	WaitingLogin      WaitingFor = "login"      // a sign-in
	WaitingChoice     WaitingFor = "choice"     // any other pick from a list (e.g. an API key dialog)
)

// EventAgent: the agent of a harness changed state (Agent carries it).
const EventAgent = "agent"

// AgentView is the agent part of a list row and of an EventAgent event:
// every field is omitted when empty, so a row without an agent keeps its
// shape.
type AgentView struct {
	// Agent is the adapter's name ("claude-code", "codex", "gemini",
	// "generic"); set for every harness.
	Agent string `json:"agent,omitempty"`
	// AgentState is set while the harness has a run.
	AgentState AgentState `json:"agent_state,omitempty"`
	WaitingFor WaitingFor `json:"waiting_for,omitempty"`
	// Prompt is the question of a waiting agent as the screen shows it
	// (for a permission, the command it wants to run).
	Prompt string `json:"prompt,omitempty"`
	// Choices are the answers the screen offers, in order, without their
	// numbers or markers.
	Choices []string `json:"choices,omitempty"`
	// Suggested is the choice that lets the agent go on (Claude Code's
	// trust dialog: "Yes, I trust this folder", not the first, "No,
	// exit"), when its adapter knows which; "" when it does not.
	Suggested string `json:"suggested,omitempty"`
	// PromptID tells this waiting prompt from every other one the daemon
	// has seen, of any harness or run, even one that looks the same: a
	// new one each time the agent comes to a prompt; the same while the
	// dialog stays (its cursor may move). 0 when not waiting.
	PromptID uint64 `json:"prompt_id,omitempty"`
	// Until is when a limited agent may go on, when it says so.
	Until *time.Time `json:"until,omitempty"`
	// AgentMessage is the error an agent in state error shows.
	AgentMessage string `json:"agent_message,omitempty"`
}
