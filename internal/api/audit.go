package api

import "time"

// OpAudit reads the audit log (docs/operations.md).
const OpAudit = "audit"

// AuditArgs are the arguments of audit.
type AuditArgs struct {
	// SinceS keeps the entries of the last SinceS seconds (0: all kept).
	SinceS float64 `json:"since_s,omitempty"`
}

// AuditEntry is one line of audit.jsonl: who did which state-changing
// operation through which door, on what, and how it went. It never holds
// an argument's value (a prompt, a text typed): the op, its target's name
// and its outcome only.
type AuditEntry struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	Door  Door      `json:"door"`
	Op    string    `json:"op"`
	// Target is the harness (or upstream, profile, project) the op acted
	// on, "" for the fleet as a whole.
	Target string `json:"target,omitempty"`
	// Outcome is "ok" or the error's wire code.
	Outcome string `json:"outcome"`
}

// AuditResult is the answer of audit, oldest first.
type AuditResult struct {
	Entries []AuditEntry `json:"entries"`
	// Dropped counts entries this daemon could not write (its queue was
	// full or the disk failed).
	Dropped uint64 `json:"dropped"`
}
