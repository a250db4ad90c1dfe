//go:build race && linux

package nowait

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// The race detector takes every read made through package syscall's
// Read as seeing every write made before it through its Write (one
// shared point, acquired and released), so that a goroutine reading what
// another wrote through a pipe or socket is not reported as racing with
// it. preadv2 and pwritev2 made directly skip that, and every read of the
// daemon's streams would look unsynchronized with the writer at the
// other end. Under -race each read and write here also makes an empty
// read or write of /dev/null through syscall, for its annotation alone,
// and tells the detector which bytes the kernel wrote or read.

// devNull is a descriptor of its own (not an *os.File, whose finalizer
// would close it), open for the life of the process.
var devNull = func() int {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		panic("nowait: open " + os.DevNull + ": " + err.Error())
	}
	return fd
}()

// raceAcquire marks what was read as seeing every earlier write, and
// the kernel's write of p.
func raceAcquire(p []byte) {
	if len(p) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p))
	}
	_, _ = syscall.Read(devNull, nil)
}

// raceRelease marks what is written as seen by every later read, and the
// kernel's read of p.
func raceRelease(p []byte) {
	if len(p) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p))
	}
	_, _ = syscall.Write(devNull, nil)
}
