// Package proctree owns whole process trees on Linux and macOS: the
// attributes every unit is spawned with (own session, parent-death
// signal), the daemon's child subreaper role, a reaper for adopted orphans, finding and killing a unit's
// descendants by an environment marker, and a ledger in the state dir so the
// next daemon start can end whatever a crashed daemon left behind.
//
// The system's view of processes is in proc_linux.go (/proc, pidfds,
// prctl) and proc_darwin.go (sysctl; macOS has neither a parent-death
// signal nor a child subreaper, see there).
//
// Identity rule: a process belongs to a unit only if its /proc/PID/environ
// carries the unit's HARNESS_TREE marker (or, for a group, some member does).
// Pids and process-group ids are reused, so they are never trusted alone.
package proctree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
)

// MarkerKey is the environment variable that tags every process of a unit.
const MarkerKey = "HARNESS_TREE"

// MarkerEnv returns the environment entry ("HARNESS_TREE=" + marker) to add
// to a unit's environment. Descendants inherit it, and it stays visible in
// /proc/PID/environ even after they call setsid.
func MarkerEnv(marker string) string {
	return MarkerKey + "=" + marker
}

// NewInstanceID returns a random id for one daemon run, used as the first
// part of every marker that run creates.
func NewInstanceID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("instance id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NewMarker returns the marker of one spawn: unique per daemon instance,
// unit and run number. Its prefix InstancePrefix(instance) matches every
// marker of that instance.
func NewMarker(instance string, unit string, run uint64) string {
	return InstancePrefix(instance) + unit + ":" + strconv.FormatUint(run, 10)
}

// InstancePrefix returns the prefix shared by all markers of one daemon
// instance, for FindPrefix. The separator keeps "ab" from matching "abc".
func InstancePrefix(instance string) string {
	return instance + ":"
}

// Find returns the pids whose environment carries exactly MarkerEnv(marker).
// Unreadable or vanished processes, zombies and the calling process are
// skipped. An empty marker matches nothing.
func Find(marker string) []int {
	if marker == "" {
		return nil
	}
	return findMatching(func(v string) bool { return v == marker })
}

// FindPrefix is Find for every marker that starts with prefix (for example
// InstancePrefix of a whole daemon instance). An empty prefix matches
// nothing, so a mistake can never select every marked process.
func FindPrefix(prefix string) []int {
	if prefix == "" {
		return nil
	}
	return findMatching(func(v string) bool { return strings.HasPrefix(v, prefix) })
}

func findMatching(match func(string) bool) []int {
	var out []int
	for _, p := range shared.scan(match) {
		if p.marked {
			out = append(out, p.pid)
		}
	}
	return out
}

// Kill signals the unit tree rooted at pid: the process group -pid, the
// groups of every marker carrier, and every carrier one by one (which covers
// descendants that called setsid). It returns how many distinct live
// processes were signalled.
//
// It is meant for what is left after the main process pid was reaped;
// exited is a StartMark taken after its exit and before its reap (0: none).
// A group is signalled when it is verifiably the unit's: some member
// carries the marker, or no process has the id pid any more and a live
// member of group or session pid started by exited. Such a member has held
// the id since before the reap, and the kernel does not hand out an id
// still in use as a group or session id, so group and session are still
// the unit's even when their members dropped their environment (env -i,
// sudo, MCP clients that start servers with a minimal environment). Without
// such a member the id may have been freed and taken again: a stranger's
// group whose leader is gone looks just the same. A live process that has
// the id pid again is someone else too, and then only marker carriers are
// hit. The daemon's own process group is never signalled.
func Kill(pid int, marker string, exited uint64, sig syscall.Signal) int {
	procs := shared.scan(func(v string) bool { return marker != "" && v == marker })
	groups := markedGroups(procs)
	if pid > 1 && pid != syscall.Getpgrp() {
		reused := false
		for _, p := range procs {
			// Even a zombie holds the id: the group may be someone else's.
			if p.pid == pid {
				reused = true
			}
		}
		held := false // a member from before the reap holds the id
		for _, p := range procs {
			if p.live() && (p.pgid == pid || p.sid == pid) && p.start <= exited {
				held = true
			}
		}
		if !reused && held {
			for i, p := range procs {
				if !p.live() {
					continue
				}
				if p.pgid == pid {
					groups[pid] = true
				}
				if p.sid == pid {
					// In the unit's session but another group: hit it
					// one by one, like a marker carrier.
					procs[i].marked = true
				}
			}
		}
	}
	return signalTargets(procs, groups, sig, slog.Default())
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	st, err := readStat(pid)
	if err != nil {
		return false
	}
	return st.live()
}

// procInfo is one process as seen in /proc.
type procInfo struct {
	pid, ppid, pgid, sid int
	start                uint64 // clock ticks after boot: with pid, the process's identity
	state                byte
	marked               bool // its environ matched
}

func (p procInfo) live() bool { return p.state != 'Z' && p.state != 'X' && p.state != 'x' }

// markedGroups returns the process groups with a marked member, minus the
// caller's own group and the invalid ids 0 and 1.
func markedGroups(procs []procInfo) map[int]bool {
	own := syscall.Getpgrp()
	groups := map[int]bool{}
	for _, p := range procs {
		if p.marked && p.pgid > 1 && p.pgid != own {
			groups[p.pgid] = true
		}
	}
	return groups
}

// signalTargets sends sig to every group in groups and to every marked
// process outside them; it returns the number of distinct live processes hit.
func signalTargets(procs []procInfo, groups map[int]bool, sig syscall.Signal, logger *slog.Logger) int {
	hit := map[int]bool{}
	for g := range groups {
		if err := syscall.Kill(-g, sig); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				logger.Warn("proctree: signal group", logkey.Pgid, g, logkey.Signal, sig.String(), logkey.Err, err)
			}
			continue
		}
		for _, p := range procs {
			if p.pgid == g && p.live() {
				hit[p.pid] = true
			}
		}
	}
	for _, p := range procs {
		if !p.marked || hit[p.pid] {
			continue
		}
		if err := syscall.Kill(p.pid, sig); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				logger.Warn("proctree: signal process", logkey.PID, p.pid, logkey.Signal, sig.String(), logkey.Err, err)
			}
			continue
		}
		hit[p.pid] = true
	}
	return len(hit)
}

// EndMarked SIGKILLs every process that carries marker, and the groups
// they are in, pass after pass until a pass finds none (a leftover may
// fork and setsid between a scan and its signal) or wait has passed. It
// returns the most processes one pass hit, and an error naming the
// survivors past wait.
func EndMarked(marker string, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	killed := 0
	for {
		left := Find(marker)
		n := Kill(0, marker, 0, syscall.SIGKILL)
		if n == 0 && len(left) == 0 {
			return killed, nil
		}
		killed = max(killed, n, len(left))
		for _, pid := range left {
			for Alive(pid) && time.Now().Before(deadline) {
				// Polling /proc is the only way to see a non-child go away.
				time.Sleep(5 * time.Millisecond)
			}
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("proctree: processes %v of %s survived SIGKILL", Find(marker), marker)
		}
	}
}
