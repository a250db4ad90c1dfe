package supervise

import "syscall"

// intoCgroup makes the spawn start in the cgroup open at fd (clone3 with
// CLONE_INTO_CGROUP).
func intoCgroup(attrs *syscall.SysProcAttr, fd int) {
	attrs.UseCgroupFD = true
	attrs.CgroupFD = fd
}
