package api

import "time"

// ListArgs filter `list`: with a project, only that project's units.
type ListArgs struct {
	Project string `json:"project" jsonschema:"only the harnesses of this project" mcp:"minLength=1"`
	// ProjectPath selects the project by its file (what `harness ps` knows).
	ProjectPath string `json:"project_path" mcp:"-: a project file's path, what harness ps knows from its working directory; a session names the project"`
}

// NameArg is the argument of operations that take one harness name.
type NameArg struct {
	Name string `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
}

// UnitInfo is one row of `list` (docs/design/wire.md).
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
	// Activity, IdleS and IdleSince are the busy/idle state of a harness
	// that has a process (docs/design/terminals.md): absent for stopped units and
	// upstreams; IdleSince only while idle.
	Activity  string     `json:"activity,omitempty"`
	IdleS     *float64   `json:"idle_s,omitempty"`
	IdleSince *time.Time `json:"idle_since,omitempty"`
	// Hold is why the harness is held, while it is (docs/design/agents.md).
	Hold *Hold `json:"hold,omitempty"`
	// AgentView is the agent of a harness and, while it has a run, what
	// that agent is doing (docs/design/agents.md); absent for upstreams.
	AgentView
}

// Description is the answer of `describe`: the list fields plus the unit's
// configuration, whether a newer configuration waits for the next start, and
// the current run.
type Description struct {
	UnitInfo
	Config        UnitConfigView `json:"config"`
	ConfigChanged bool           `json:"config_changed"`
	CurrentRun    *Run           `json:"current_run"`
	LastSignal    string         `json:"last_signal,omitempty"`
	LastError     string         `json:"last_error,omitempty"`
	NextRetry     *time.Time     `json:"next_retry,omitempty"`
	// Grant is a harness's effective grant per namespace ("harness" and
	// every upstream key its sessions see): what its MCP sessions may call
	// now, project rule applied (docs/design/mcp.md). Absent for upstreams.
	Grant map[string][]Class `json:"grant,omitempty"`
	// Resources are the current run's cgroup event counters (cgroup mode
	// with a run; docs/design/resources.md).
	Resources *ResourceEvents `json:"resources,omitempty"`
	// Sandbox is what the current run's sandbox reached and refused
	// (docs/sandbox.md); absent for an unconfined run.
	Sandbox *SandboxView `json:"sandbox,omitempty"`
	// AgentScreen is how the agent's adapter read the current run's
	// screen at its last look (docs/design/agents.md); absent for a
	// generic harness, an upstream, or a run whose screen was not read yet.
	AgentScreen *AgentScreen `json:"agent_screen,omitempty"`
}

// AgentScreen says whether an agent's adapter recognised what the
// program shows: a version whose screens differ from those the adapter
// knows reads as working or ready from activity, never waiting, and
// says so here.
type AgentScreen struct {
	// Recognised: a rule of the adapter read the screen at the last look.
	Recognised bool `json:"recognised"`
	// Rule names that rule ("prompt", "permission", …).
	Rule string `json:"rule,omitempty"`
	// UnrecognisedSince is when the looks that matched no rule began.
	UnrecognisedSince *time.Time `json:"unrecognised_since,omitempty"`
	// Note says what an unrecognised screen means for the state.
	Note string `json:"note,omitempty"`
}

// SandboxView is a run's sandbox as describe shows it: the levels reached
// (fs "landlock-v7", "off" or "none" when asked for and not reached;
// network "host", "netns", "netns+proxy" or "none"; tmp "mount" for a
// private /tmp, "dir" for only a private TMPDIR), why a level is missing,
// and what it was refused: Denied and LastDenied are the egress proxy's
// refusals; FilesDeniedCount and LastFileDenied the file refusals the
// kernel's audit told of, present only while they are counted (never a
// false 0); FilesDenied says why they are not counted (or may not be).
type SandboxView struct {
	FS          string `json:"fs"`
	Network     string `json:"network"`
	Tmp         string `json:"tmp,omitempty"`
	Missing     string `json:"missing,omitempty"`
	Denied      int64  `json:"denied"`
	LastDenied  string `json:"last_denied,omitempty"`
	FilesDenied string `json:"files_denied,omitempty"`
	// FilesDeniedCount is set once file refusals are counted for the run.
	FilesDeniedCount *int64 `json:"files_denied_count,omitempty"`
	// LastFileDenied is the latest refused path: the file, or for a
	// creation the directory it would be made in.
	LastFileDenied string `json:"last_file_denied,omitempty"`
}

// ResourceEvents count what the limits of a run's cgroup did.
type ResourceEvents struct {
	// PidsMax counts forks refused at tasks_max (pids.events max).
	PidsMax int64 `json:"pids_max"`
	// MemoryHigh counts throttling at memory_high (memory.events high).
	MemoryHigh int64 `json:"memory_high"`
	// MemoryMax counts reaching memory_max (memory.events max).
	MemoryMax int64 `json:"memory_max"`
	// OOMKills counts processes the OOM killer ended.
	OOMKills int64 `json:"oom_kills"`
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
	// URL and Headers are a remote upstream's endpoint as it may be shown
	// (no userinfo, query values hidden) and the names of its headers,
	// never their values.
	URL     string   `json:"url,omitempty"`
	Headers []string `json:"headers,omitempty"`
	// MaxResultBytes is an upstream's bound on one message from it
	// (max_result_bytes); absent for harnesses.
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
	// Worktree is the harness's own git worktree (docs/design/resources.md), its workdir.
	Worktree *WorktreeView `json:"worktree,omitempty"`
	// Ports are the harness's TCP ports (ports = N), HARNESS_PORT first.
	Ports []int `json:"ports,omitempty"`
	// Resource limits (docs/design/resources.md): 0 is none; memory sizes in bytes.
	TasksMax   int   `json:"tasks_max"`
	MemoryMax  int64 `json:"memory_max,omitempty"`
	MemoryHigh int64 `json:"memory_high,omitempty"`
	CPUWeight  int   `json:"cpu_weight,omitempty"`
	// TermSize is a harness's PTY size as "COLSxROWS"; IdleAfterS the
	// silence after which it counts as idle (docs/design/terminals.md). Absent for
	// upstreams.
	TermSize   string  `json:"term_size,omitempty"`
	IdleAfterS float64 `json:"idle_after,omitempty"`
	// Hooks is whether a harness's runs get its agent's hooks (the
	// hooks key, docs/design/agents.md); absent for upstreams.
	Hooks *bool `json:"hooks,omitempty"`
}

// NamesArgs selects units for start, stop and restart.
type NamesArgs struct {
	Name  string   `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
	Names []string `json:"names" mcp:"-: a facade call acts on one harness (docs/design/mcp.md names its arguments); several at once is the CLI's"`
	All   bool     `json:"all" mcp:"-: a facade call acts on one harness (docs/design/mcp.md names its arguments); the whole fleet at once is the CLI's"`
	// Force (start, restart) starts past a hold, once (docs/design/agents.md).
	Force bool `json:"force,omitempty" mcp:"-: overriding a hold (hours, budget, usage limit) is the operator's, not an agent's"`
	// Fresh (restart) starts a new conversation for an agent that resumes
	// its session (resume = true, docs/design/agents.md).
	Fresh bool `json:"fresh,omitempty" jsonschema:"start a new agent conversation, not resume it" mcp:"only=restart"`
}

// ActionResult is the answer of start, stop, restart and use_profile.
type ActionResult struct {
	Results []ActionItem `json:"results"`
}

// ActionItem says what happened to one unit.
type ActionItem struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Changed bool   `json:"changed"`
	Error   string `json:"error,omitempty"`
	// Code is the error's wire code (held for a start a hold refused).
	Code string `json:"code,omitempty"`
}
