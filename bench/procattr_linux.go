package main

import "syscall"

// dieWithParent ends a helper process with the bench.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
