// Package proctree owns whole process trees on Linux: the attributes every
// unit is spawned with (own session, parent-death signal), the daemon's child
// subreaper role, a reaper for adopted orphans, finding and killing a unit's
// descendants by an environment marker, and a ledger in the state dir so the
// next daemon start can end whatever a crashed daemon left behind.
//
// Identity rule: a process belongs to a unit only if its /proc/PID/environ
// carries the unit's HARNESS_TREE marker (or, for a group, some member does).
// Pids and process-group ids are reused, so they are never trusted alone.
package proctree

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/harness-dev/harness/internal/logkey"
	"golang.org/x/sys/unix"
)

// MarkerKey is the environment variable that tags every process of a unit.
const MarkerKey = "HARNESS_TREE"

// SysProcAttr returns the attributes every unit is spawned with: a new
// session (so the unit is its own process group and leads it) and SIGKILL as
// the parent-death signal. Callers may set Setctty/Ctty on the returned value
// for a PTY; it is a fresh value on every call.
//
// The parent-death signal follows the OS thread that forked the child, so
// never start a child from a goroutine that called runtime.LockOSThread and
// then exits without unlocking: the thread dies and the child is killed.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// BecomeSubreaper makes the calling process a child subreaper, so orphaned
// descendants (for example ones that double-forked and called setsid) are
// re-parented to it instead of to init and can still be found and reaped.
// The setting is process-wide.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

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
	for _, p := range scan(match) {
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
// It is meant for what is left after the main process pid was reaped. A
// group is signalled when it is verifiably the unit's: some member carries
// the marker, or no live process has the id pid any more while members of
// group or session pid remain. The kernel does not hand out a pid that is
// still in use as a group or session id, so such members are the unit's
// even when they dropped their environment (env -i, sudo, MCP clients that
// start servers with a minimal environment). A live process that has the
// id pid again is someone else, and then only marker carriers are hit. The
// daemon's own process group is never signalled.
func Kill(pid int, marker string, sig syscall.Signal) int {
	procs := scan(func(v string) bool { return marker != "" && v == marker })
	groups := markedGroups(procs)
	if pid > 1 && pid != syscall.Getpgrp() {
		reused := false
		for _, p := range procs {
			// Even a zombie holds the id: the group may be someone else's.
			if p.pid == pid {
				reused = true
			}
		}
		if !reused {
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

// scan lists every process except the caller, marking those whose environ
// has a HARNESS_TREE value accepted by match (nil: read no environ at
// all). Processes that vanish or
// cannot be read are skipped: they are either gone or not ours.
func scan(match func(string) bool) []procInfo {
	d, err := os.Open("/proc")
	if err != nil {
		slog.Default().Warn("proctree: open /proc", logkey.Err, err)
		return nil
	}
	names, err := d.Readdirnames(-1)
	if cerr := d.Close(); cerr != nil {
		slog.Default().Warn("proctree: close /proc", logkey.Err, cerr)
	}
	if err != nil {
		slog.Default().Warn("proctree: list /proc", logkey.Err, err)
		return nil
	}
	self := os.Getpid()
	out := make([]procInfo, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		if match != nil && st.live() {
			st.marked = environMatches(pid, match)
		}
		out = append(out, st)
	}
	return out
}

// readStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("parse stat of %d: no command end", pid)
	}
	// Fields from 3 (state) on; starttime is field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("parse stat of %d: short record", pid)
	}
	p := procInfo{pid: pid, state: f[0][0]}
	for j, dst := range []*int{&p.ppid, &p.pgid, &p.sid} {
		if *dst, err = strconv.Atoi(f[1+j]); err != nil {
			return procInfo{}, fmt.Errorf("parse stat of %d: %w", pid, err)
		}
	}
	if p.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procInfo{}, fmt.Errorf("parse stat of %d: start time: %w", pid, err)
	}
	return p, nil
}

// environMatches reports whether /proc/PID/environ holds a HARNESS_TREE
// entry whose value match accepts.
func environMatches(pid int, match func(string) bool) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	key := []byte(MarkerKey + "=")
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(kv, key); ok && match(string(v)) {
			return true
		}
	}
	return false
}
