package supervise

// Kind says how a unit is spawned.
type Kind string

// The two unit kinds.
const (
	KindHarness  Kind = "harness"  // a terminal program in a PTY
	KindUpstream Kind = "upstream" // an MCP server on pipes, or over HTTP when UnitConfig.URL is set
)

// State is what a unit is doing right now (docs/design/lifecycle.md); Enabled is intent.
type State string

// The states of the lifecycle.
const (
	StateStopped    State = "stopped"
	StateStarting   State = "starting"
	StateRunning    State = "running"
	StateDegraded   State = "degraded"   // crash-looping: running or waiting with backoff
	StateRestarting State = "restarting" // waiting restart_delay before a policy restart
	StateStopping   State = "stopping"
	StateFailed     State = "failed"
)

// Active reports whether the unit has a process or is about to get one by
// itself: everything but stopped and failed.
func (s State) Active() bool {
	return s != StateStopped && s != StateFailed && s != ""
}
