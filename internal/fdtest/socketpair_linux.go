package fdtest

import "syscall"

// socketpair makes a close-on-exec unix stream socket pair.
func socketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
