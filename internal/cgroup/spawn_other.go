//go:build !linux

package cgroup

import "syscall"

// SpawnInto is never reached off Linux: there is no cgroup tree, so there
// is no Group to spawn into.
func SpawnInto(*syscall.SysProcAttr, int) {}
