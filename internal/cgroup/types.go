// Package cgroup gives the daemon a cgroup v2 subtree of its own: a child
// of its own cgroup with one cgroup per unit and one leaf per run, spawns
// placed into their leaf by clone3 (CLONE_INTO_CGROUP), signals to every
// process of a leaf, cgroup.kill, and a wait for a leaf to become empty.
//
// Membership is all the daemon needs to own a run, and every cgroup v2
// kernel tracks it, so the daemon stays in the cgroup it was started in.
// Resource controllers (limits.go) are enabled only in the daemon's own
// subtree, which holds no process of its own, so the "no internal
// processes" rule never applies.
//
// Cgroups are Linux-only: on other systems (cgroup_other.go) Locate
// fails saying so, and the daemon holds its units by process group and
// marker instead (the fallback mode).
package cgroup

// The declarations every platform shares: the daemon and the supervisor
// name these types whether or not cgroups exist (cgroup_other.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
)

// SubtreeName is the name of a daemon's subtree in its own cgroup. It is
// derived from the daemon's socket path, which the single-instance lock
// guards: two daemons never share a subtree, and a daemon restarted on the
// same socket finds what its crashed predecessor left.
func SubtreeName(socketPath string) string {
	sum := sha256.Sum256([]byte(socketPath))
	return "harness-" + hex.EncodeToString(sum[:8])
}

// Limits are one run's resource limits; a zero field is no limit.
type Limits struct {
	TasksMax   int
	MemoryMax  int64
	MemoryHigh int64
	CPUWeight  int
}

// Controller names.
const (
	Pids   = "pids"
	Memory = "memory"
	CPU    = "cpu"
)

// Controllers are the resource controllers, in the order they are shown.
var Controllers = []string{Pids, Memory, CPU}

// ControllerState says whether a controller limits runs and how.
type ControllerState struct {
	Name    string
	Version string // "v2", "v1", or "" when unavailable
	Why     string // why it is unavailable, or what it cannot do
}

// Counters are the events of a run's cgroup that the daemon shows.
type Counters struct {
	PidsMax    int64 // forks refused at tasks_max (pids.events max)
	MemoryHigh int64 // times the run was throttled at memory_high (v2 memory.events high)
	MemoryMax  int64 // times the run reached memory_max (memory.events max, v1 failcnt)
	OOMKills   int64 // processes the OOM killer ended (memory.events oom_kill)
}

// Location is where a process sits in the cgroup v2 hierarchy.
type Location struct {
	Mount string // mount point of the cgroup2 file system
	Path  string // the process's cgroup, relative to Mount ("/" for the root)
}

// Dir is the process's cgroup directory.
func (l Location) Dir() string {
	return filepath.Join(l.Mount, filepath.FromSlash(l.Path))
}

// ErrWaitCancelled is returned by WaitEmpty when its done channel closed
// first.
var ErrWaitCancelled = errors.New("cgroup: wait for empty cancelled")
