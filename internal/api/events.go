package api

import "time"

// Kinds of Event.
const (
	// EventState: a unit changed state.
	EventState = "state"
	// EventExit: a run of a unit ended.
	EventExit = "exit"
	// EventFlapping: a unit is crash-looping (degraded, or failed).
	EventFlapping = "flapping"
	// EventSpawnFailed: a spawn failed; Message says why.
	EventSpawnFailed = "spawn_failed"
	// EventActivity: a harness turned busy or idle (Activity); Time is
	// when its output resumed (busy) or stopped (idle).
	EventActivity = "activity"
	// EventReload: the configuration was reloaded (or a project went up or down).
	EventReload = "reload"
	// EventToolChanged: an upstream tool changed since it was pinned, or
	// appeared where pin = "strict" holds new tools; Unit is the upstream,
	// Message names the tool and what changed (docs/gateway.md).
	EventToolChanged = "tool_changed"
	// EventSandboxDenied: a sandboxed harness was refused a host (or a
	// path, as the kernel's audit tells it); Message is "TARGET: why"
	// ("PATH: fs.read_file"). Once per target per minute.
	EventSandboxDenied = "sandbox_denied"
)

// Event is pushed to connections that subscribed (OpSubscribe).
type Event struct {
	Kind     string `json:"kind"`
	Unit     string `json:"unit,omitempty"`
	State    string `json:"state,omitempty"`
	RunID    uint64 `json:"run_id,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Message  string `json:"message,omitempty"`
	// EndCause is why an EventExit run ended when the daemon knows more
	// than the exit status: EndCauseOOM.
	EndCause string    `json:"end_cause,omitempty"`
	Activity string    `json:"activity,omitempty"` // EventActivity: "busy" or "idle"
	Time     time.Time `json:"time,omitzero"`
	// Agent is the new agent state of an EventAgent event.
	Agent *AgentView `json:"agent,omitempty"`
	// Hold is the new hold of an EventHold event (nil: lifted).
	Hold *Hold `json:"hold,omitempty"`
	// Diff is the worktree's diff stat of an EventTurnDone event.
	Diff *DiffStat `json:"diff,omitempty"`
}
