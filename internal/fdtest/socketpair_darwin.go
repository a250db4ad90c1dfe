package fdtest

import "syscall"

// socketpair makes a close-on-exec unix stream socket pair. macOS has no
// SOCK_CLOEXEC: the flag is set after, under ForkLock so that no fork
// in between inherits the pair.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}
