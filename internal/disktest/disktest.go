// Package disktest is the test kit of the files written by one writer
// goroutine off the callers' path (the run history, the process ledger):
// a disk that holds every write (Gate) or refuses them (Full), plugged in
// where the writer wraps its file, and the check that a caller never waits
// for that disk (NeverWaits). It is imported by tests only.
package disktest

import (
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// Gate is a disk that holds every write until Open.
type Gate struct {
	in, open         chan struct{}
	inOnce, openOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{in: make(chan struct{}), open: make(chan struct{})} }

// Wrap is the writer's wrap hook: w behind the gate.
func (g *Gate) Wrap(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		g.inOnce.Do(func() { close(g.in) })
		<-g.open
		return w.Write(p)
	})
}

// Stuck is closed once a write is held at the gate.
func (g *Gate) Stuck() <-chan struct{} { return g.in }

// Open lets every write through from now on; it may be called again.
func (g *Gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

// NeverWaits runs f, which must not wait for the disk held at g, and
// fails t if it has not returned within d. The gate is opened either way,
// so the writer can finish.
func NeverWaits(t testing.TB, g *Gate, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		g.Open()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		g.Open()
		t.Fatalf("%s waited for the disk", what)
	}
}

// Full is a disk that refuses every write while it is full.
type Full struct {
	mu    sync.Mutex
	full  bool
	tries int
}

// ErrFull is what a write to a full disk returns.
var ErrFull = errors.New("no space left on device")

// NewFull returns a disk that is full (or not) from the start.
func NewFull(full bool) *Full { return &Full{full: full} }

// Wrap is the writer's wrap hook: w on this disk.
func (f *Full) Wrap(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tries++
		if f.full {
			return 0, ErrFull
		}
		return w.Write(p)
	})
}

// Set fills the disk or frees it.
func (f *Full) Set(full bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = full
}

// Tries counts the writes attempted so far.
func (f *Full) Tries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
