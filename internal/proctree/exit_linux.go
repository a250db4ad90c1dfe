package proctree

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the child pid has exited and leaves it a zombie
// (waitid with WNOWAIT keeps its status for the Wait that reaps it).
// Until that Wait, the zombie holds its id, so the process group and the
// session it led cannot be handed to anyone else: signals to them reach
// only what is left of its own tree.
//
// It waits on a pidfd in the runtime's poller: a blocking waitid holds an
// OS thread for as long as the child lives, so 1,000 running units held
// 1,000 threads. Where pidfds cannot be polled (Linux before 5.10) it
// blocks in waitid.
func WaitExit(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitExitBlocking(pid)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitExitBlocking(pid)
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			// Zeroed: with WNOHANG and nothing to report, waitid
			// leaves it so; a report sets Signo to SIGCHLD.
			var info unix.Siginfo
			werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			if !errors.Is(werr, unix.EINTR) {
				return werr != nil || info.Signo != 0
			}
		}
	})
	switch {
	case err != nil:
		// The poller does not take this pidfd: wait the old way.
		return waitExitBlocking(pid)
	case werr != nil:
		return fmt.Errorf("wait for %d without reaping: %w", pid, werr)
	}
	return nil
}

// waitExitBlocking is WaitExit in a blocking waitid, which holds a thread.
func waitExitBlocking(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return fmt.Errorf("wait for %d without reaping: %w", pid, err)
			}
			return nil
		}
	}
}

// userHZ is the unit of /proc/PID/stat's start time: clock ticks of the
// boot clock, 100 a second on every architecture Go supports here.
const userHZ = 100

// StartMark returns a start time (as Ident.Start counts it) that every
// process started before the call has at most and every process started
// after it returns exceeds. Start times are clock ticks, so it waits for
// the next tick: at most 10 ms.
func StartMark() uint64 {
	tick := bootTick()
	for {
		now := bootTick()
		if now != tick {
			return tick
		}
		time.Sleep(time.Millisecond)
	}
}

// bootTick is the boot clock in /proc's start-time ticks; the kernel
// takes a process's start time from the same clock (a time namespace
// shifts both alike).
func bootTick() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(fmt.Sprintf("proctree: CLOCK_BOOTTIME: %v", err)) // Linux 2.6.39 and later always have it
	}
	return uint64(ts.Nano()) / (1_000_000_000 / userHZ)
}
