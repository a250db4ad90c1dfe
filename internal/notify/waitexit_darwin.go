package notify

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// waitExit blocks until the child pid has exited and leaves it a zombie: a
// kqueue exit note does not reap (macOS's waitid is not in x/sys).
func waitExit(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("kqueue: %w", err)
	}
	defer unix.Close(kq)
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev[0].Fflags = unix.NOTE_EXIT
	for {
		var got [1]unix.Kevent_t
		n, err := unix.Kevent(kq, ev[:], got[:], nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return nil // already a zombie: it has exited
		case err != nil:
			return fmt.Errorf("kevent: %w", err)
		case n == 1 && got[0].Flags&unix.EV_ERROR != 0:
			if errno := unix.Errno(got[0].Data); errno != unix.ESRCH {
				return fmt.Errorf("kevent: %w", errno)
			}
			return nil
		case n == 1:
			return nil
		}
	}
}
