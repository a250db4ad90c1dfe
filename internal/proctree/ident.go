package proctree

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Ident names one process for as long as the machine runs: a pid is reused,
// a pid with its start time (clock ticks after boot, /proc/PID/stat field
// 22) is not. Across a reboot nothing is comparable; see BootID.
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

func signalPID(pid int, sig syscall.Signal) (bool, error) {
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signal %d: %w", pid, err)
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
