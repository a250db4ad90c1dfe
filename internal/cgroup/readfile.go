//go:build linux

package cgroup

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// readKernelFile reads a small cgroup or /proc file with plain system
// calls. os.ReadFile adds a stat, the poller's registration and its
// cleanup to every read, and a stop --all of 1,000 runs reads several
// such files per run (their listings, cgroup.events, memory.events, each
// member's /proc/PID/cgroup). A missing file gives an error that
// errors.Is fs.ErrNotExist, as os.ReadFile's does.
func readKernelFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// hasChildren reports whether the cgroup dir has child cgroups: a cgroup
// directory's link count is 2 plus its subdirectories, so one stat spares
// a listing of a leaf. A dir that is gone has none.
func hasChildren(dir string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		if err == unix.ENOENT || err == unix.ENODEV {
			return false, nil
		}
		return false, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	return st.Nlink != 2, nil
}
