package api

// Review (docs/design/resources.md): what an agent changed in its worktree, and the
// comments a person sends back to it.
const (
	// OpDiff answers a harness's changes against its base.
	OpDiff = "diff"
	// OpReview types a review (path:line comments) to a harness's agent
	// once it is ready.
	OpReview = "review"
)

// EventTurnDone: an agent with a worktree went from working back to
// ready; Diff is its worktree's diff stat then.
const EventTurnDone = "turn_done"

// DiffArgs are the arguments of diff.
type DiffArgs struct {
	Name string `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
	// Stat leaves the hunks out: the files and their counts only.
	Stat bool `json:"stat,omitempty" jsonschema:"only the files and their added/deleted counts, no hunks"`
}

// Diff is the answer of diff: the harness's worktree (committed, staged,
// unstaged and untracked, ignored files left out) against its merge base
// with the worktree's base.
type Diff struct {
	// Base is the merge base commit, Head the worktree's HEAD commit.
	Base string `json:"base"`
	Head string `json:"head"`
	// BaseRef is the base as configured ("main"; the repository's
	// branch when worktree.base is unset; HEAD for a plain checkout).
	BaseRef string     `json:"base_ref,omitempty"`
	Files   []DiffFile `json:"files"`
	// Truncated: the hunks were cut at MaxDiffBytes; every file is still
	// listed with its counts, those past the cut without hunks.
	Truncated bool `json:"truncated,omitempty"`
}

// Stat sums d's files.
func (d Diff) Stat() DiffStat {
	s := DiffStat{Files: len(d.Files)}
	for _, f := range d.Files {
		s.Added += f.Added
		s.Deleted += f.Deleted
	}
	return s
}

// MaxDiffBytes bounds the patch text a diff answer carries.
const MaxDiffBytes = 1 << 20

// Statuses of a DiffFile.
const (
	DiffAdded    = "added"
	DiffModified = "modified"
	DiffDeleted  = "deleted"
	DiffRenamed  = "renamed"
	DiffCopied   = "copied"
	DiffType     = "type_changed"
)

// DiffFile is one changed file. A binary file has no counts and no hunks.
type DiffFile struct {
	Path string `json:"path"`
	// OldPath is where a renamed or copied file came from.
	OldPath string     `json:"old_path,omitempty"`
	Status  string     `json:"status"`
	Added   int        `json:"added"`
	Deleted int        `json:"deleted"`
	Binary  bool       `json:"binary"`
	Hunks   []DiffHunk `json:"hunks"`
}

// DiffHunk is one hunk: its ranges as git's @@ line says, and its lines
// with their prefix ("+", "-" or " ").
type DiffHunk struct {
	OldStart int      `json:"old_start"`
	OldLines int      `json:"old_lines"`
	NewStart int      `json:"new_start"`
	NewLines int      `json:"new_lines"`
	Lines    []string `json:"lines"`
}

// DiffStat is a diff's size: the files changed and the lines added and
// deleted (binary files count as files only).
type DiffStat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// ReviewArgs are the arguments of review: comments as "path:line: text".
type ReviewArgs struct {
	Name     string   `json:"name" jsonschema:"harness name, or project/name" mcp:"required,minLength=1"`
	Comments []string `json:"comments" jsonschema:"one comment per entry, as path:line: text"`
	// WaitS waits up to this long for the review to be typed; 0 answers
	// at once (queued, or typed when the agent was ready).
	WaitS float64 `json:"wait_s,omitempty" jsonschema:"wait up to this many seconds for the review to be typed" mcp:"minimum=0,maximum=3600"`
}

// Review statuses.
const (
	// ReviewQueued: held until the agent is ready.
	ReviewQueued = "queued"
	// ReviewTyped: typed to the agent and submitted.
	ReviewTyped = "typed"
)

// ReviewResult is the answer of review.
type ReviewResult struct {
	Name     string `json:"name"`
	RunID    uint64 `json:"run_id"`
	Status   string `json:"status"`
	Comments int    `json:"comments"`
	// Text is the message as it is (or will be) typed.
	Text string `json:"text"`
}
