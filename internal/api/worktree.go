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
