package supervise

import "golang.org/x/sys/unix"

// The termios ioctls (tcgetattr, tcsetattr with TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
