package api

// OpWorktreeRemove removes a harness's worktree (docs/design/resources.md).
const OpWorktreeRemove = "worktree_remove"

// WorktreeView is a harness's worktree as describe shows it.
type WorktreeView struct {
	Repo   string `json:"repo"`
	Base   string `json:"base,omitempty"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
	// Created says the worktree exists (it is made before the first run).
	Created bool `json:"created"`
	// SetupFailed is the last failed setup's note (outcome setup_failed)
	// with its last lines, until a setup succeeds.
	SetupFailed string `json:"setup_failed,omitempty"`
}

// WorktreeRemoveArgs are the arguments of worktree_remove.
type WorktreeRemoveArgs struct {
	Name  string `json:"name"`
	Force bool   `json:"force"`
}

// WorktreeRemoveResult is the answer of worktree_remove. The branch stays
// in the repository.
type WorktreeRemoveResult struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Removed bool   `json:"removed"`
}

// OpLand brings a harness's branch home (docs/worktrees.md): it commits
// what the agent left uncommitted, then merges the branch into base in the
// repository's checkout or pushes it (and opens a pull request), then
// stops the harness and removes its worktree.
const OpLand = "land"

// The modes of a land.
const (
	LandFastForward = "fast-forward"
	LandMerge       = "merge"
	LandSquash      = "squash"
	LandPush        = "push"
)

// LandArgs are the arguments of land.
type LandArgs struct {
	Name string `json:"name" jsonschema:"harness name (project/name for project harnesses)" mcp:"required,minLength=1"`
	// Message is the commit message of what was left uncommitted (and of
	// a squash); default: the first line of the agent's last answer.
	Message string `json:"message,omitempty" jsonschema:"commit message (default: the first line of the agent's last answer)"`
	Squash  bool   `json:"squash,omitempty" jsonschema:"bring the branch into base as one commit"`
	Push    bool   `json:"push,omitempty" jsonschema:"push the branch to the repository's remote instead of merging it"`
	// PR opens a pull request with pr_command after the push (it implies
	// push).
	PR bool `json:"pr,omitempty" jsonschema:"after the push, open a pull request (pr_command) and answer its URL"`
	// Keep leaves the harness running and its worktree in place.
	Keep bool `json:"keep,omitempty" jsonschema:"keep the harness and its worktree"`
	// Force lands while the agent is working.
	Force bool `json:"force,omitempty" jsonschema:"land even while the agent is working"`
}

// LandResult is the answer of land.
type LandResult struct {
	Harness string `json:"harness"`
	Branch  string `json:"branch"`
	Base    string `json:"base"`
	// Commit is what base now points at (fast-forward, merge, squash), or
	// the branch's head that was pushed.
	Commit string `json:"commit"`
	Merged bool   `json:"merged,omitempty"`
	Pushed bool   `json:"pushed,omitempty"`
	PRURL  string `json:"pr_url,omitempty"`
	// Mode is fast-forward, merge, squash or push.
	Mode string `json:"mode"`
	// Committed is the commit made of what the agent left uncommitted;
	// empty when there was nothing.
	Committed string `json:"committed,omitempty"`
	// Removed says the harness was stopped and its worktree removed.
	Removed bool `json:"removed"`
	// Notes say what else happened: base had moved, an interrupted land
	// was completed, teardown failed, the worktree was kept.
	Notes []string `json:"notes,omitempty"`
}
