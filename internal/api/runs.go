package api

import "time"

// Cause says why a run was started.
type Cause string

// The causes of a run: why it was started.
const (
	CauseManual    Cause = "manual"
	CauseAutostart Cause = "autostart"
	CauseRestart   Cause = "restart"
	CauseSchedule  Cause = "schedule"
	CauseTrigger   Cause = "trigger"
	// CauseWebhook: a [webhook.NAME] delivery started it (docs/design/events.md).
	CauseWebhook Cause = "webhook"
)

// Run is one spawn of a unit. A run that has ended has EndedAt and either
// has an ExitCode, or a Signal, or (rarely) neither when the exit status
// is unknown.
type Run struct {
	ID        uint64     `json:"id"`
	Harness   string     `json:"harness"`
	Cause     Cause      `json:"cause"`
	PID       int        `json:"pid"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	ExitCode  *int       `json:"exit_code"`
	Signal    string     `json:"signal"`
	// Outcome says how the run ended (docs/design/runs.md); empty while it runs.
	// Note says more when there is more to say: the timeout, how many
	// firings were missed, the repeated tool call.
	Outcome RunOutcome `json:"outcome,omitempty"`
	Note    string     `json:"note,omitempty"`
	// EndCause says why the run ended when the daemon knows more than the
	// exit status: EndCauseOOM (docs/design/resources.md).
	EndCause string `json:"end_cause,omitempty"`
	// LimitUntil: the run ended on a usage limit and the harness is held
	// until then (its reset plus jitter, docs/design/agents.md).
	LimitUntil *time.Time `json:"limit_until,omitempty"`
	// RunAgent is what the agent of the run reported (docs/design/agents.md):
	// the session, tokens and cost, and a job's result.
	RunAgent
}

// RunAgent is what a run's agent reported: from a non-interactive job's
// machine-readable output or its transcript (docs/design/agents.md). Every
// field is omitted while unknown.
type RunAgent struct {
	// SessionID is the agent's own session (conversation) id: what a
	// resumed run continues.
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Tokens    Tokens `json:"tokens,omitzero"`
	// CostUSD is the run's cost in US dollars as the agent reports it.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Result is a job's final answer, clipped (MaxResultBytes).
	Result string `json:"result,omitempty"`
	// ToolCalls are the run's tool calls from its transcript, the newest
	// MaxRunToolCalls, each with its outcome (docs/design/agents.md).
	ToolCalls []RunToolCall `json:"tool_calls,omitempty"`
	// ToolCallsOmitted counts the older tool calls left out.
	ToolCallsOmitted int `json:"tool_calls_omitted,omitempty"`
	// LastAPIError is the last model-API error the transcript logged,
	// masked and clipped (MaxTurnText).
	LastAPIError string `json:"last_api_error,omitempty"`
}

// RunToolCall is one tool call of a run: its name and outcome (ok, error,
// or absent while the agent logged no result). Its arguments are in
// `turns`, not on the run.
type RunToolCall struct {
	Name    string `json:"name"`
	Outcome string `json:"outcome,omitempty"`
}

// MaxRunToolCalls bounds RunAgent.ToolCalls: a run record keeps the newest
// calls, `turns` has them all.
const MaxRunToolCalls = 50

// MaxResultBytes bounds RunAgent.Result: the run history keeps the
// answer's head, not a document.
const MaxResultBytes = 16 << 10

// Tokens counts a run's tokens.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// RunOutcome is how a run ended (docs/design/runs.md).
type RunOutcome string

// The outcomes of a run: how it ended.
const (
	RunOK          RunOutcome = "ok"           // exited 0
	RunFailed      RunOutcome = "failed"       // exited non-zero, by a signal, or never spawned
	RunTimedOut    RunOutcome = "timed_out"    // stopped by its timeout
	RunSkipped     RunOutcome = "skipped"      // a firing while the job was active (on_overlap skip)
	RunMissed      RunOutcome = "missed"       // firings due while the daemon was down
	RunInterrupted RunOutcome = "interrupted"  // stopped, restarted, replaced, or the daemon went away
	RunLimited     RunOutcome = "limited"      // the agent reached a usage limit
	RunLoop        RunOutcome = "loop"         // the loop guard ended it
	RunHeld        RunOutcome = "held"         // a firing refused by a hold
	RunSetupFailed RunOutcome = "setup_failed" // the worktree's setup failed: the start spawned nothing
)

// ExitOutcome is the outcome of a run that ended on its own: ok for exit
// code 0, failed otherwise.
func ExitOutcome(exitCode *int, signal string) RunOutcome {
	if exitCode != nil && *exitCode == 0 && signal == "" {
		return RunOK
	}
	return RunFailed
}

// EndCauseOOM: the OOM killer ended a process of the run (its cgroup
// reached memory_max).
const EndCauseOOM = "oom"

// Ended reports whether the run has ended.
func (r Run) Ended() bool { return r.EndedAt != nil }

// RunsArgs are the arguments of `runs`.
type RunsArgs struct {
	Name  string `json:"name" jsonschema:"only runs of this harness" mcp:"minLength=1"`
	Limit int    `json:"limit" jsonschema:"only the newest this many runs" mcp:"minimum=1"`
}

// JobInfo is one row of `jobs`.
type JobInfo struct {
	Name     string     `json:"name"`
	Schedule string     `json:"schedule"`
	NextFire *time.Time `json:"next_fire"`
	State    string     `json:"state"`
	LastRun  *Run       `json:"last_run"`
}

// Trigger is one row of `triggers`: an armed schedule.
type Trigger struct {
	Job      string    `json:"job"`
	Kind     string    `json:"kind"` // "cron" | "every" | "descriptor"
	Spec     string    `json:"spec"`
	NextFire time.Time `json:"next_fire"` // zero when the schedule never fires again
	// LastFired is when the trigger last started the job (skips excluded).
	LastFired *time.Time `json:"last_fired"`
	Fired     int        `json:"fired"`
	Skipped   int        `json:"skipped"`
}

// TriggerArgs are the arguments of `trigger`.
type TriggerArgs struct {
	Name     string  `json:"name" jsonschema:"job name" mcp:"required,minLength=1"`
	Wait     bool    `json:"wait" jsonschema:"follow the run to its end"`
	TimeoutS float64 `json:"timeout_s" jsonschema:"with wait: give up after this many seconds" mcp:"exclusiveMinimum=0,maximum=86400"`
}

// TriggerResult is the answer of `trigger`.
type TriggerResult struct {
	Name       string     `json:"name"`
	RunID      uint64     `json:"run_id,omitempty"`
	Skipped    bool       `json:"skipped"`
	ActiveRun  uint64     `json:"active_run,omitempty"`
	Waited     bool       `json:"waited"`
	TimedOut   bool       `json:"timed_out,omitempty"`
	ExitCode   *int       `json:"exit_code"`
	Signal     string     `json:"signal,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	Tail       []LogEntry `json:"tail"`
	// Outcome of the run waited for (docs/design/runs.md); "skipped" for a firing
	// refused because the job was active. Queued: on_overlap = "queue"
	// will run it once the active run ends. Replaced: the active run was
	// stopped for this one (on_overlap = "replace").
	Outcome  RunOutcome `json:"outcome,omitempty"`
	Note     string     `json:"note,omitempty"`
	Queued   bool       `json:"queued,omitempty"`
	Replaced uint64     `json:"replaced,omitempty"`
}

// TrajectoryArgs are the arguments of `get_trajectory`, in the CLI's words.
type TrajectoryArgs struct {
	Name     string  `json:"name" jsonschema:"harness name" mcp:"required,minLength=1"`
	Run      uint64  `json:"run" jsonschema:"run id, from harness_list_trajectories" mcp:"required,minimum=1"`
	Cursor   *uint64 `json:"cursor" jsonschema:"entries after this id (the previous next_cursor)" mcp:"minimum=0"`
	MaxBytes int     `json:"max_bytes" jsonschema:"answer size cap (default 256 KiB)" mcp:"minimum=1"`
}

// TrajectoryInfo is one row of `list_trajectories`: a kept transcript joined
// with its run record (cause, start, end and exit status; empty when the
// run history no longer holds the run).
type TrajectoryInfo struct {
	Run       uint64     `json:"run"`
	Cause     Cause      `json:"cause"`
	StartedAt *time.Time `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	ExitCode  *int       `json:"exit_code"`
	Signal    string     `json:"signal,omitempty"`
	Entries   int        `json:"entries"`
	Bytes     int64      `json:"bytes"`
}

// Trajectory is the answer of `get_trajectory`: a page of one run's
// entries. next_cursor is the id of the last entry returned (the cursor
// given when there is none); pass it back as cursor for the rest.
type Trajectory struct {
	Name       string     `json:"name"`
	Run        uint64     `json:"run"`
	Entries    []LogEntry `json:"entries"`
	NextCursor uint64     `json:"next_cursor"`
	Truncated  bool       `json:"truncated"`
	Note       string     `json:"note,omitempty"`
}
