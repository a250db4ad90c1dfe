package sshtest

import "syscall"

// dieWithParent ends sshd with the test or bench that started it.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
