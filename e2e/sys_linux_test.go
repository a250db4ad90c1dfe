//go:build e2e

package e2e

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// withParentDeath adds SIGKILL as the parent-death signal: a test binary
// that dies (a timeout panic) takes the process along.
func withParentDeath(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// limitNoFileOf sets another process's RLIMIT_NOFILE (prlimit).
func limitNoFileOf(t *testing.T, pid int, n uint64) {
	t.Helper()
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}, nil); err != nil {
		t.Fatal(err)
	}
}
