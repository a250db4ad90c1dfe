package control

import (
	"time"

	"github.com/harness-dev/harness/internal/logs"
	"github.com/harness-dev/harness/internal/runs"
)

// UnitInfo is one row of `list` (DESIGN §9).
type UnitInfo struct {
	Name         string     `json:"name"`
	State        string     `json:"state"`
	Enabled      bool       `json:"enabled"`
	PID          int        `json:"pid"`
	RestartCount int        `json:"restart_count"`
	LastExitCode *int       `json:"last_exit_code"`
	Description  string     `json:"description"`
	Project      string     `json:"project,omitempty"`
	Schedule     string     `json:"schedule,omitempty"`
	NextFire     *time.Time `json:"next_fire,omitempty"`
}

// Description is the answer of `describe`: the list fields plus the unit's
// configuration, whether a newer configuration waits for the next start, and
// the current run.
type Description struct {
	UnitInfo
	Config        UnitConfigView `json:"config"`
	ConfigChanged bool           `json:"config_changed"`
	CurrentRun    *runs.Run      `json:"current_run"`
	LastSignal    string         `json:"last_signal,omitempty"`
	LastError     string         `json:"last_error,omitempty"`
	NextRetry     *time.Time     `json:"next_retry,omitempty"`
}

// UnitConfigView is the configuration of a harness as describe shows it. It
// carries the env_file path, never anything read from it.
type UnitConfigView struct {
	Cmd               string            `json:"cmd"`
	Args              []string          `json:"args"`
	Workdir           string            `json:"workdir,omitempty"`
	EnvFile           string            `json:"env_file,omitempty"`
	Env               map[string]string `json:"env,omitempty"`
	Restart           string            `json:"restart"`
	RestartDelayS     float64           `json:"restart_delay"`
	StopGraceS        float64           `json:"stop_grace"`
	MCPAllow          []string          `json:"mcp_allow"`
	Schedule          string            `json:"schedule,omitempty"`
	HarvestTrajectory bool              `json:"harvest_trajectory,omitempty"`
}

// LogsArgs are the arguments of `logs`, in the CLI's words.
type LogsArgs struct {
	Name     string  `json:"name"`
	Format   string  `json:"format"`
	Cursor   *uint64 `json:"cursor"`
	Offset   *int64  `json:"offset"`
	MaxBytes int     `json:"max_bytes"`
	Lines    int     `json:"lines"`
}

// LogsSummary is the summary answer of `logs`: activity entries.
type LogsSummary struct {
	Format     string       `json:"format"`
	Entries    []logs.Entry `json:"entries"`
	NextCursor uint64       `json:"next_cursor"`
	Truncated  bool         `json:"truncated"`
	Note       string       `json:"note"`
}

// LogsRaw is the raw answer of `logs`: a window of the byte ring.
type LogsRaw struct {
	Format     string `json:"format"`
	Text       string `json:"text"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Truncated  bool   `json:"truncated"`
	Note       string `json:"note"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
}

// NamesArgs selects units for start, stop and restart.
type NamesArgs struct {
	Name  string   `json:"name"`
	Names []string `json:"names"`
	All   bool     `json:"all"`
}

// ActionResult is the answer of start, stop and restart.
type ActionResult struct {
	Results []ActionItem `json:"results"`
}

// ActionItem says what happened to one unit.
type ActionItem struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
}

// RunsArgs are the arguments of `runs`.
type RunsArgs struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

// JobInfo is one row of `jobs`.
type JobInfo struct {
	Name     string     `json:"name"`
	Schedule string     `json:"schedule"`
	NextFire *time.Time `json:"next_fire"`
	State    string     `json:"state"`
	LastRun  *runs.Run  `json:"last_run"`
}

// TriggerArgs are the arguments of `trigger`.
type TriggerArgs struct {
	Name     string  `json:"name"`
	Wait     bool    `json:"wait"`
	TimeoutS float64 `json:"timeout_s"`
}

// TriggerResult is the answer of `trigger`.
type TriggerResult struct {
	Name       string       `json:"name"`
	RunID      uint64       `json:"run_id,omitempty"`
	Skipped    bool         `json:"skipped"`
	ActiveRun  uint64       `json:"active_run,omitempty"`
	Waited     bool         `json:"waited"`
	TimedOut   bool         `json:"timed_out,omitempty"`
	ExitCode   *int         `json:"exit_code"`
	Signal     string       `json:"signal,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	Tail       []logs.Entry `json:"tail"`
}

// ProfileInfo is one row of `profiles`.
type ProfileInfo struct {
	Name      string   `json:"name"`
	Harnesses []string `json:"harnesses"`
	Autostart bool     `json:"autostart"`
	Active    bool     `json:"active"`
}

// ReloadResult says what a successful reload changed.
type ReloadResult struct {
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	Changed  []string `json:"changed"`
	Warnings []string `json:"warnings"`
}

// UpstreamStatus is one row of `mcp_status`.
type UpstreamStatus struct {
	Key       string     `json:"key"`
	Project   string     `json:"project,omitempty"`
	State     string     `json:"state"`
	PID       int        `json:"pid"`
	Tools     int        `json:"tools"`
	Restarts  int        `json:"restarts"`
	LastError string     `json:"last_error"`
	NextRetry *time.Time `json:"next_retry,omitempty"`
}

// DaemonInfo is the answer of `daemon_info`.
type DaemonInfo struct {
	Version   string           `json:"version"`
	Proto     string           `json:"proto"`
	PID       int              `json:"pid"`
	StartedAt time.Time        `json:"started_at"`
	Uptime    string           `json:"uptime"`
	UptimeS   float64          `json:"uptime_s"`
	Paths     Paths            `json:"paths"`
	Profile   string           `json:"profile"`
	MCPURL    string           `json:"mcp_url,omitempty"`
	Warnings  []string         `json:"warnings"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	Ownership Ownership        `json:"ownership"`
}

// Paths are the files the daemon uses.
type Paths struct {
	Config   string `json:"config"`
	Socket   string `json:"socket"`
	StateDir string `json:"state_dir"`
}
