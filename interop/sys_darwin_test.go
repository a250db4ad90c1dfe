//go:build interop

package interop

import "syscall"

// withParentDeath is a no-op: macOS has no parent-death signal, so a test
// binary that dies leaves its processes to the test's cleanups.
func withParentDeath(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
