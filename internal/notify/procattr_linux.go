package notify

import "syscall"

// commandAttrs puts a command sink in a process group of its own (so a
// timeout ends all of it) and ends it with the daemon.
func commandAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
