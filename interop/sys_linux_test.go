//go:build interop

package interop

import "syscall"

// withParentDeath adds SIGKILL as the parent-death signal: a test binary
// that dies (a timeout panic) takes the process along.
func withParentDeath(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
