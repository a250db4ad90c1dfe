//go:build race && linux

package nowait

import (
	"os"
	"syscall"
)

// The race detector takes every read made through package syscall as
// seeing every write made before it (syscall.Read acquires and
// syscall.Write releases one shared point), so that a goroutine reading
// what another wrote through a pipe or socket is not reported as racing
// with it. Raw system calls skip that, and every read of the daemon's
// streams would look unsynchronized with the writer at the other end.
// Under -race each raw read and write also makes an empty read or write
// of /dev/null through syscall, for its annotation alone.

// devNull is a descriptor of its own (not an *os.File, whose finalizer
// would close it), open for the life of the process.
var devNull = func() int {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		panic("nowait: open " + os.DevNull + ": " + err.Error())
	}
	return fd
}()

// raceAcquire marks what was read as seeing every earlier write.
func raceAcquire() { _, _ = syscall.Read(devNull, nil) }

// raceRelease marks what is written as seen by every later read.
func raceRelease() { _, _ = syscall.Write(devNull, nil) }
