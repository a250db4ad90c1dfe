package supervise

import "golang.org/x/sys/unix"

// queuedInput is how many bytes wait unread in the terminal on fd.
func queuedInput(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }
