//go:build !linux

package supervise

import "syscall"

// intoCgroup is never reached off Linux: there is no cgroup tree, so no
// unit has a cgroupOwner.
func intoCgroup(*syscall.SysProcAttr, int) {}
