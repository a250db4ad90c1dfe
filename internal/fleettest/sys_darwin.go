package fleettest

import "syscall"

// withParentDeath: macOS has no parent-death signal; a daemon is stopped
// at the test's cleanup only.
func withParentDeath(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
