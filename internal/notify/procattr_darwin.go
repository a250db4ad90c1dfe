package notify

import "syscall"

// commandAttrs puts a command sink in a process group of its own (so a
// timeout ends all of it). macOS has no parent-death signal: a sink
// outlives a daemon that crashes mid-send, until its own end.
func commandAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
