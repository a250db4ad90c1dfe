package attachterm

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// The termios ioctls (tcgetattr, tcsetattr with TCSANOW).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// terminalPath is a path that opens the terminal fd is on anew:
// /proc/self/fd/N, which on Linux reopens the file rather than sharing
// fd's description.
func terminalPath(fd int, _ *syscall.Stat_t) (string, error) {
	return fmt.Sprintf("/proc/self/fd/%d", fd), nil
}
