package supervise

import "golang.org/x/sys/unix"

// fionread is FIONREAD on Darwin (_IOR('f', 127, int)).
const fionread = 0x4004667f

// queuedInput is how many bytes wait unread in the terminal on fd.
func queuedInput(fd int) (int, error) { return unix.IoctlGetInt(fd, fionread) }
