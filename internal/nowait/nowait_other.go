//go:build !linux

package nowait

// Read is unsupported here: the caller reads the usual way.
func Read(fd uintptr, p []byte) (int, error) { return 0, ErrUnsupported }

// Write is unsupported here: the caller writes the usual way.
func Write(fd uintptr, p []byte) (int, error) { return 0, ErrUnsupported }
