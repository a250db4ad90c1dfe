package api

// Harnesses made and removed without editing a config file
// (docs/agents.md): `harness new` writes harness.d/NAME.toml beside the
// config file, `harness rm` removes it.
const (
	OpNew    = "new"
	OpRm     = "rm"
	OpAgents = "agents"
)

// NewArgs are the arguments of new: a harness of a known agent (Agent) or
// of any command (Cmd and Args), written as the TOML a person would write.
// Paths (Repo, PromptFile, Workdir) are absolute: the CLI resolves them
// against its own directory.
type NewArgs struct {
	Name  string `json:"name" jsonschema:"the harness's name: letters, digits, - and _" mcp:"required,minLength=1"`
	Agent string `json:"agent,omitempty" jsonschema:"a known agent (harness_agents lists them): claude-code, codex, gemini, opencode, qwen-code, copilot, cline, pi, demo"`
	// Cmd and Args run any program: a session with write may make agents
	// only (running any program is input, as harness_run is).
	Cmd  string   `json:"cmd,omitempty" mcp:"-: any program is more than write (harness run is input); a session makes known agents"`
	Args []string `json:"args,omitempty" mcp:"-: the arguments of cmd, which a session does not give"`
	// Prompt and PromptFile are the agent's task (one of them).
	Prompt     string `json:"prompt,omitempty" jsonschema:"the task typed to the agent once it is ready"`
	PromptFile string `json:"prompt_file,omitempty" jsonschema:"an absolute path of a file holding the task, read at every run"`
	Repo       string `json:"repo,omitempty" jsonschema:"the git repository to work in (absolute path); with worktree, a worktree of it"`
	Worktree   bool   `json:"worktree,omitempty" jsonschema:"work in a git worktree of repo of its own, on branch harness/NAME"`
	Base       string `json:"base,omitempty" jsonschema:"the commit or branch the worktree starts from (default: the repository's HEAD)"`
	Model      string `json:"model,omitempty" jsonschema:"the model the agent uses"`
	Approval   string `json:"approval,omitempty" jsonschema:"ask: the agent asks before it changes anything; auto: it does not" mcp:"enum=ask|auto"`
	// Project names a project that is up: its directory is the repo.
	Project string `json:"project,omitempty" jsonschema:"a project that is up (harness up): its directory is the repository"`
	// Workdir is where a harness without a repo runs ("" the daemon's).
	Workdir string `json:"workdir,omitempty" jsonschema:"the directory to run in when there is no repo (absolute path)"`
	NoStart bool   `json:"no_start,omitempty" jsonschema:"write it but do not start it"`
}

// NewResult is the answer of new: the file written and whether the
// harness was started.
type NewResult struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Started bool   `json:"started"`
	// State is the harness's state after the start (or stopped).
	State string `json:"state"`
	// Warnings are the reload's warnings about the new file.
	Warnings []string `json:"warnings"`
}

// RmArgs are the arguments of rm.
type RmArgs struct {
	Name  string `json:"name" jsonschema:"a harness made by harness_new (its file is in harness.d)" mcp:"required,minLength=1"`
	Force bool   `json:"force,omitempty" jsonschema:"remove its worktree even with uncommitted changes or commits not on its base"`
}

// RmResult is the answer of rm.
type RmResult struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Worktree is the removed worktree's path, "" when it had none.
	Worktree string `json:"worktree,omitempty"`
}

// AgentsArgs are the arguments of agents (none).
type AgentsArgs struct{}

// AgentProgram is one agent a harness can run, as `harness agents` lists
// it: its program looked up on the daemon's PATH.
type AgentProgram struct {
	Agent   string `json:"agent"`
	Program string `json:"program"`
	// Path is where the program is; "" when it is missing.
	Path    string `json:"path,omitempty"`
	Found   bool   `json:"found"`
	Version string `json:"version,omitempty"`
	// Error says why the version is not known (a timeout, an exit status).
	Error string `json:"error,omitempty"`
}
