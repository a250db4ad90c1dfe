package api

// OpRun starts a scratch harness (docs/design/agents.md, `harness run`): a throw-away
// harness that is not in the config file, is never restarted, and is
// forgotten when its program ends (a reload keeps it while it lives).
const OpRun = "run"

// RunArgs are the arguments of run. Name is optional: "" derives a unique
// one from Cmd. Workdir is the directory the program starts in ("" is the
// daemon's). Detach only says how the CLI follows it; the daemon starts the
// program the same way either way.
type RunArgs struct {
	Name    string   `json:"name,omitempty"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	Detach  bool     `json:"detach,omitempty"`
}

// RunResult is the answer of run: the scratch harness's name and the id of
// the run it started.
type RunResult struct {
	Name  string `json:"name"`
	RunID uint64 `json:"run_id"`
	PID   int    `json:"pid"`
}
