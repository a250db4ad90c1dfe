package proctree

import (
	"errors"
	"fmt"
	"syscall"
)

// Ident names one process for as long as the machine runs: a pid is reused,
// a pid with its start time (on Linux clock ticks after boot, /proc/PID/stat
// field 22; on macOS microseconds since the epoch, kinfo_proc's
// p_starttime) is not. Across a reboot nothing is comparable; see BootID.
type Ident struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func (p procInfo) ident() Ident { return Ident{PID: p.pid, Start: p.start} }

// IdentOf reads the identity of pid (a zombie has one too).
func IdentOf(pid int) (Ident, error) {
	st, err := readStat(pid)
	if err != nil {
		return Ident{}, err
	}
	return st.ident(), nil
}

// LiveIdent reports whether id still runs: the pid exists, is not a
// zombie, and started at the recorded time.
func LiveIdent(id Ident) bool {
	st, err := readStat(id.PID)
	return err == nil && st.live() && st.start == id.Start
}

func signalPID(pid int, sig syscall.Signal) (bool, error) {
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signal %d: %w", pid, err)
	}
	return true, nil
}
