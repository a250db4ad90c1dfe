package main

import "syscall"

// dieWithParent is nothing on macOS, which has no parent-death signal:
// the bench ends its helpers itself. (Its CPU and memory figures come
// from /proc: the bench measures on Linux.)
func dieWithParent() *syscall.SysProcAttr { return nil }
