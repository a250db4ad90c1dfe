package api

// OpDelegate hands a prompt to an agent harness and waits for its turn
// to end (docs/design/agents.md, "Delegation").
const OpDelegate = "delegate"

// Bounds of DelegateArgs.TimeoutS.
const (
	DefaultDelegateTimeoutS = 600
	MaxDelegateTimeoutS     = 3600
)

// DelegateArgs are the arguments of `delegate`, in the CLI's words.
type DelegateArgs struct {
	Name   string `json:"name" jsonschema:"the agent harness to hand the prompt to (project/name for a project's); with agent, a new one made by that name" mcp:"required,minLength=1"`
	Prompt string `json:"prompt" jsonschema:"what to ask the agent: typed as a person would, once the agent is ready" mcp:"required,minLength=1"`
	// Agent, Repo, Worktree and Base make the harness first, as `new`
	// does (a harness.d file), when Agent is set.
	Agent    string `json:"agent,omitempty" jsonschema:"make a new harness of this agent first (harness_agents lists them), as harness_new does"`
	Repo     string `json:"repo,omitempty" jsonschema:"with agent: the git repository it works in (absolute path)"`
	Worktree bool   `json:"worktree,omitempty" jsonschema:"with agent: in a git worktree of repo of its own, on branch harness/NAME"`
	Base     string `json:"base,omitempty" jsonschema:"with agent and worktree: the commit or branch the worktree starts from"`
	// TimeoutS bounds the whole call: the wait for the agent to be ready
	// and for its turn to end. The agent goes on after it.
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds to wait for the turn to end (default 600, at most 3600); the agent goes on after" mcp:"minimum=1,maximum=3600"`
}

// Delegation outcomes (DelegateResult.Status).
const (
	// DelegateCompleted: the agent took the prompt and is ready again.
	DelegateCompleted = "completed"
	// DelegateTimedOut: the time ran out first; Agent says what the agent
	// is doing (waiting for a person, with its prompt and choices, or
	// still working). Typed says whether the prompt was typed.
	DelegateTimedOut = "timed_out"
	// DelegateFailed: the agent ended the turn in error or on a usage
	// limit (Agent says which).
	DelegateFailed = "failed"
)

// DelegateResult is what `delegate` answers.
type DelegateResult struct {
	Name   string `json:"name"`
	RunID  uint64 `json:"run_id"`
	Status string `json:"status"`
	// Typed is false when the agent was never ready within the time.
	Typed bool `json:"typed"`
	// Answer is the agent's last answer of the turn, from its transcript
	// (clipped to MaxTurnText); empty when its agent keeps none, then
	// Note says so.
	Answer string `json:"answer,omitempty"`
	Note   string `json:"note,omitempty"`
	// Agent is the agent's state when the call returned.
	Agent AgentView `json:"agent"`
	// Diff is the stat of what the harness's worktree holds against its
	// base once the turn is done; absent without a worktree.
	Diff *DiffStat `json:"diff,omitempty"`
	// Created says the call made the harness (agent was given).
	Created bool `json:"created,omitempty"`
}
