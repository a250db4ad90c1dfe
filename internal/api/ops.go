package api

// Names of the control operations (docs/design/wire.md). Each is answered by
// internal/control's op table; the facade tools and the CLI verbs refer to
// these constants, and tests check that every op has a handler, and a verb
// or a stated reason for having none.
const (
	OpList             = "list"
	OpDescribe         = "describe"
	OpLogs             = "logs"
	OpStart            = "start"
	OpStop             = "stop"
	OpRestart          = "restart"
	OpRuns             = "runs"
	OpJobs             = "jobs"
	OpTriggers         = "triggers"
	OpTrigger          = "trigger"
	OpProfiles         = "profiles"
	OpUseProfile       = "use_profile"
	OpReload           = "reload"
	OpDaemonInfo       = "daemon_info"
	OpShutdown         = "shutdown"
	OpMCPStatus        = "mcp_status"
	OpProjectUp        = "project_up"
	OpProjectDown      = "project_down"
	OpListTrajectories = "list_trajectories"
	OpGetTrajectory    = "get_trajectory"
	OpCalls            = "calls"
)

// OpSubscribe is answered by the socket server itself, not by control: it
// turns on Event frames for the connection.
const OpSubscribe = "subscribe"

// NoArgs is the argument of operations that take none. Like every argument
// type it is decoded strictly: {} is the only accepted value.
type NoArgs struct{}

// OK is the answer of operations that only acknowledge (shutdown).
type OK struct {
	OK bool `json:"ok"`
}
