package attachterm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The termios ioctls (tcgetattr, tcsetattr with TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// terminalPath is a path that opens the terminal fd is on anew. macOS's
// /dev/fd/N shares fd's description, so it finds the terminal's own node
// in /dev by its device number (st, fd's stat), as ttyname(3) does.
func terminalPath(_ int, st *syscall.Stat_t) (string, error) {
	ents, err := os.ReadDir("/dev")
	if err != nil {
		return "", fmt.Errorf("find the terminal: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "tty") || name == "tty" || e.Type()&os.ModeCharDevice == 0 {
			continue
		}
		p := filepath.Join("/dev", name)
		var dst syscall.Stat_t
		if syscall.Stat(p, &dst) == nil && dst.Rdev == st.Rdev {
			return p, nil
		}
	}
	return "", fmt.Errorf("find the terminal: no /dev/tty* with device %#x", st.Rdev)
}
