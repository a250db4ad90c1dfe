package nowait

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads into p from fd once, without waiting: n > 0, or n == 0 and
// err == nil at the end of the stream, or err is unix.EAGAIN when there
// is nothing to read yet, ErrUnsupported, or the call's error.
func Read(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := rw(unix.SYS_PREADV2, fd, p)
	if err == nil {
		raceAcquire(p[:n])
	}
	return n, err
}

// Write writes p to fd once, without waiting: what fits now (n may be
// short), or err is unix.EAGAIN when nothing fits, ErrUnsupported, or
// the call's error.
func Write(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	raceRelease(p)
	return rw(unix.SYS_PWRITEV2, fd, p)
}

func rw(trap uintptr, fd uintptr, p []byte) (int, error) {
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	for {
		// offset -1: the descriptor's own position (streams have none).
		n, _, e := syscall.Syscall6(trap, fd, uintptr(unsafe.Pointer(&iov)), 1, ^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, unix.EAGAIN
		case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS, unix.EPERM, unix.EACCES:
			// Not this descriptor's (or this kernel's, or a seccomp
			// filter refused the call): the usual way says what is wrong.
			return 0, ErrUnsupported
		}
		if trap == unix.SYS_PREADV2 {
			return 0, os.NewSyscallError("preadv2", e)
		}
		return 0, os.NewSyscallError("pwritev2", e)
	}
}
