//go:build e2e

package e2e

import (
	"syscall"
	"testing"
)

// withParentDeath is a no-op: macOS has no parent-death signal, so a test
// binary that dies leaves its processes to the test's cleanups.
func withParentDeath(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }

// limitNoFileOf fails: macOS cannot set another process's limits.
func limitNoFileOf(t *testing.T, _ int, _ uint64) {
	t.Helper()
	t.Fatal("setting another process's RLIMIT_NOFILE (prlimit) is Linux-only")
}
