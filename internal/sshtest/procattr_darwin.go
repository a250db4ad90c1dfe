package sshtest

import "syscall"

// dieWithParent is nothing on macOS, which has no parent-death signal:
// the caller's Close ends sshd.
func dieWithParent() *syscall.SysProcAttr { return nil }
