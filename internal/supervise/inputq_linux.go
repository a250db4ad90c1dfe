package supervise

import (
	"os"

	"golang.org/x/sys/unix"
)

// unreadInput is how many bytes typed into master's terminal the program
// has not read yet (TIOCINQ on the terminal's own side, reached through
// TIOCGPTPEER without a path); ok is false when it cannot be told. In
// canonical mode only whole lines count: a partial line reads as 0.
func unreadInput(master *os.File) (n int, ok bool) {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0, false
	}
	_ = rc.Control(func(fd uintptr) {
		peer, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC))
		if errno != 0 {
			return
		}
		defer unix.Close(int(peer))
		// Bytes written to the master reach the input queue from a kernel
		// work item that may lag on a loaded machine; a poll of the
		// terminal side finds no input and waits for that work to finish
		// (n_tty_poll flushes it), so the count below includes them.
		fds := []unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, 0); err != unix.EINTR {
				break
			}
		}
		if v, err := unix.IoctlGetInt(int(peer), unix.TIOCINQ); err == nil {
			n, ok = v, true
		}
	})
	return n, ok
}
