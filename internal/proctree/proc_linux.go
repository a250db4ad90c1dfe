//go:build linux

package proctree

// What Linux offers a process tree's owner: a parent-death signal, the
// child subreaper role, /proc for every process's ids, start time and
// environment, pidfds, and the kernel's boot id.

import (
	"bytes"
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

// scan lists every process except the caller, marking those whose environ
// has a HARNESS_TREE value accepted by match (nil: read no environ at
// all). Processes that vanish or
// cannot be read are skipped: they are either gone or not ours.
func scan(match func(string) bool) []procInfo {
	return scanPIDs(func(_ int, v string) bool { return match(v) }, match == nil)
}

// scanPIDs is scan with a match that is told whose environ it looks at.
func scanPIDs(match func(pid int, v string) bool, noEnviron bool) []procInfo {
	return scanWith(match, noEnviron, nil)
}

// scanExcept is scan(nil) without the processes skip accepts, whose stat
// is never read: the reaper passes over its own children that way, a
// thousand files fewer per pass with a thousand units.
func scanExcept(skip func(pid int) bool) []procInfo {
	return scanWith(nil, true, skip)
}

// scanWith is scanPIDs leaving out the pids skip accepts (nil: none).
func scanWith(match func(pid int, v string) bool, noEnviron bool, skip func(pid int) bool) []procInfo {
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
		if err != nil || pid == self || (skip != nil && skip(pid)) {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		if !noEnviron && st.live() {
			st.marked = environMatches(pid, func(v string) bool { return match(pid, v) })
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

// SignalIdent sends sig to id if that very process still runs. A pidfd
// pins the process while its start time is compared, so a pid reused in
// between is never hit. It reports whether the signal was sent.
func SignalIdent(id Ident, sig syscall.Signal) (bool, error) {
	if id.PID <= 1 {
		return false, nil
	}
	pfd, err := unix.PidfdOpen(id.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.3: compare, then signal, with a window between.
		if !LiveIdent(id) {
			return false, nil
		}
		return signalPID(id.PID, sig)
	}
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("pidfd of %d: %w", id.PID, err)
	}
	defer unix.Close(pfd)
	if !LiveIdent(id) {
		return false, nil
	}
	if err := unix.PidfdSendSignal(pfd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signal %d: %w", id.PID, err)
	}
	return true, nil
}

// BootID is the kernel's random id of the current boot. Process
// identities recorded under another boot id name nothing that runs.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
