package cgroup

import "syscall"

// SpawnInto makes a spawn with attrs start in the cgroup open at fd
// (Group.FD; clone3 with CLONE_INTO_CGROUP).
func SpawnInto(attrs *syscall.SysProcAttr, fd int) {
	attrs.UseCgroupFD = true
	attrs.CgroupFD = fd
}
