package proctree

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the child pid has exited and leaves it a zombie
// (a kqueue exit note does not reap; macOS's waitid is not in x/sys).
// Until the Wait that reaps it, the zombie holds its id, so the process
// group and the session it led cannot be handed to anyone else.
func WaitExit(pid int) error {
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

// StartMark returns a start time (as Ident.Start counts it: microseconds
// since the epoch) that every process started before the call has at
// most and every process started after it returns exceeds.
func StartMark() uint64 {
	mark := time.Now().UnixMicro()
	for time.Now().UnixMicro() == mark {
		time.Sleep(time.Microsecond)
	}
	return uint64(mark)
}
