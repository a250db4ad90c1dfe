package proctree

// What macOS offers a process tree's owner, through sysctl: every
// process's ids, state and start time (kern.proc.all, kern.proc.pid), its
// environment (kern.procargs2, readable for the caller's own user's
// processes, which is all a daemon may signal anyway) and the boot's
// session uuid. macOS has no parent-death signal and no child subreaper:
// a unit outliving a crashed daemon is ended from the ledger at the next
// start, and an orphan re-parented to launchd is still found by its marker.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"github.com/harness-dev/harness/internal/logkey"
	"golang.org/x/sys/unix"
)

// SysProcAttr returns the attributes every unit is spawned with: a new
// session, so the unit is its own process group and leads it. macOS has
// no parent-death signal. Callers may set Setctty/Ctty on the returned
// value for a PTY; it is a fresh value on every call.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// BecomeSubreaper does nothing: macOS has no child subreaper, so orphaned
// descendants go to launchd. They keep their marker, which is how Find,
// Kill and the ledger's cleanup find them; only EndDescendants and the
// reaper, which go by parentage, no longer see them.
func BecomeSubreaper() error { return nil }

// scan lists every process except the caller, marking those whose
// environment has a HARNESS_TREE value accepted by match (nil: read no
// environment at all). Processes that vanish or cannot be read are
// skipped: they are either gone or not ours.
func scan(match func(string) bool) []procInfo {
	return scanPIDs(func(_ int, v string) bool { return match(v) }, match == nil)
}

// scanExcept is scan(nil) without the processes skip accepts. sysctl
// lists every process at once, so they are only filtered out.
func scanExcept(skip func(pid int) bool) []procInfo {
	all := scan(nil)
	out := all[:0]
	for _, p := range all {
		if !skip(p.pid) {
			out = append(out, p)
		}
	}
	return out
}

// scanPIDs is scan with a match that is told whose environ it looks at.
func scanPIDs(match func(pid int, v string) bool, noEnviron bool) []procInfo {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		slog.Default().Warn("proctree: list processes", logkey.Err, err)
		return nil
	}
	self := os.Getpid()
	out := make([]procInfo, 0, len(all))
	for i := range all {
		p := infoOf(&all[i])
		if p.pid == self || p.pid == 0 {
			continue
		}
		if !noEnviron && p.live() {
			pid := p.pid
			p.marked = environMatches(pid, func(v string) bool { return match(pid, v) })
		}
		out = append(out, p)
	}
	return out
}

// readStat reads one process's ids, state and start time.
func readStat(pid int) (procInfo, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return procInfo{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		return procInfo{}, fmt.Errorf("read process %d: no such process", pid)
	}
	return infoOf(k), nil
}

// sZomb is p_stat of a zombie (sys/proc.h SZOMB).
const sZomb = 5

func infoOf(k *unix.KinfoProc) procInfo {
	p := procInfo{
		pid:   int(k.Proc.P_pid),
		ppid:  int(k.Eproc.Ppid),
		pgid:  int(k.Eproc.Pgid),
		state: 'R',
		start: uint64(k.Proc.P_starttime.Sec)*1_000_000 + uint64(k.Proc.P_starttime.Usec),
	}
	if k.Proc.P_stat == sZomb {
		p.state = 'Z'
	}
	// kinfo_proc carries no session id; getsid answers for any process.
	if sid, err := unix.Getsid(p.pid); err == nil {
		p.sid = sid
	}
	return p
}

// environMatches reports whether pid's environment holds a HARNESS_TREE
// entry whose value match accepts. kern.procargs2 is argc (a 32-bit int),
// the executable's path, NUL padding, argc arguments, then the
// environment, each string NUL-terminated.
func environMatches(pid int, match func(string) bool) bool {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(b) < 4 {
		return false
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	_, b, _ = bytes.Cut(b, []byte{0}) // the executable's path
	b = bytes.TrimLeft(b, "\x00")
	for i := 0; i < argc && len(b) > 0; i++ {
		_, b, _ = bytes.Cut(b, []byte{0})
	}
	key := []byte(MarkerKey + "=")
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if len(kv) == 0 {
			break // the end of the environment
		}
		if v, ok := bytes.CutPrefix(kv, key); ok && match(string(v)) {
			return true
		}
	}
	return false
}

// SignalIdent sends sig to id if that very process still runs. macOS has
// no pidfd: the start time is compared, then the signal sent, with a
// window between in which the pid could be reused. It reports whether the
// signal was sent.
func SignalIdent(id Ident, sig syscall.Signal) (bool, error) {
	if id.PID <= 1 || !LiveIdent(id) {
		return false, nil
	}
	return signalPID(id.PID, sig)
}

// BootID is the kernel's random id of the current boot
// (kern.bootsessionuuid). Process identities recorded under another boot
// id name nothing that runs.
func BootID() (string, error) {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	return id, nil
}
