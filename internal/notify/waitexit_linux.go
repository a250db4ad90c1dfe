package notify

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitExit blocks until the child pid has exited and leaves it a zombie:
// WNOWAIT keeps its status for the Wait that reaps it.
func waitExit(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
