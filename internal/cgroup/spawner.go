//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// spawnerLeaf is the spawning thread's own leaf in each v1 hierarchy's
// subtree. A unit's directory never starts with '.' (escapeName), so no
// unit can have this name.
const spawnerLeaf = ".spawner"

// errSpawnerClosed: a Start after the tree was closed.
var errSpawnerClosed = errors.New("cgroup: the tree is closed")

// spawner is one thread of the daemon that starts every run which has v1
// leaves (docs/design/resources.md). It lives in leaves of its own
// (SUBTREE/.spawner), moves into a run's leaves for the fork, and back.
// A move between two leaves costs the kernel a fraction of a move into
// the daemon's own cgroup, which a spawn from any thread pays on its way
// back (joinThread): on a hybrid layout with pids, memory and cpu in v1,
// about 80 µs a spawn against 165-290 µs. Spawns are one at a time
// already (the reaper's lock, Go's fork lock), so one thread costs them
// no parallelism. The thread is locked to its goroutine for good, so no
// other goroutine ever runs in its cgroups; it ends with the tree.
type spawner struct {
	home []string // its leaves, one per v1 hierarchy
	reqs chan spawnReq
	stop chan struct{}
	done chan struct{} // closed when the thread's goroutine has returned
	once sync.Once     // close's
	err  error         // close's
}

// spawnReq is one Start: join to, run f, answer on out.
type spawnReq struct {
	to  []string
	f   func() error
	out chan error
}

// startSpawner makes the spawner's leaves below each v1 subtree and
// starts its thread there. On an error nothing is left behind.
func startSpawner(v1 []v1Hier) (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq), stop: make(chan struct{}), done: make(chan struct{})}
	for _, h := range v1 {
		d := filepath.Join(h.dir, spawnerLeaf)
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("cgroup: create %s: %w", d, err), s.removeLeaves())
		}
		s.home = append(s.home, d)
	}
	ready := make(chan error, 1)
	go s.start(ready)
	if err := <-ready; err != nil {
		<-s.done // the thread ends with its goroutine, leaving its leaves
		return nil, errors.Join(err, s.removeLeaves())
	}
	return s, nil
}

// start locks the spawner's goroutine to a thread other than the
// process's main one, and runs the loop there. Never unlocked: a
// goroutine that returns locked takes its thread with it, so the thread
// never runs anything else from its cgroups. The main thread is not
// taken: /proc/self/cgroup reads its cgroups as the daemon's own, and it
// does not end with a goroutine.
func (s *spawner) start(ready chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		s.loop(ready)
		return
	}
	// While this goroutine holds the main thread, a new one runs on
	// another; it locks that one, then this lets the main thread go.
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked)
		s.loop(ready)
	}()
	<-locked
	runtime.UnlockOSThread()
}

// loop serves Starts on a locked thread until the tree closes.
func (s *spawner) loop(ready chan<- error) {
	defer close(s.done)
	tid := []byte(strconv.Itoa(unix.Gettid()))
	if err := moveThread(tid, s.home); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case <-s.stop:
			return
		case r := <-s.reqs:
			err := moveThread(tid, r.to)
			if err == nil {
				err = r.f()
			}
			if herr := moveThread(tid, s.home); herr != nil {
				err = errors.Join(err, fmt.Errorf("cgroup: the spawning thread stays in a run's cgroup: %w", herr))
			}
			r.out <- err
		}
	}
}

// run runs f on the spawner's thread while it is in the cgroups to.
func (s *spawner) run(to []string, f func() error) error {
	out := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{to: to, f: f, out: out}:
		return <-out
	case <-s.done:
		return errSpawnerClosed
	}
}

// close ends the thread and removes its leaves (their removal waits out
// the thread's exit: removeDir retries a busy cgroup).
func (s *spawner) close() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.err = s.removeLeaves()
	})
	return s.err
}

func (s *spawner) removeLeaves() error {
	var errs []error
	for _, d := range s.home {
		errs = append(errs, removeDir(d))
	}
	return errors.Join(errs...)
}

// moveThread writes the thread id tid into each cgroup's tasks file.
func moveThread(tid []byte, dirs []string) error {
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "tasks"), tid, 0); err != nil {
			return fmt.Errorf("cgroup: join %s: %w", d, err)
		}
	}
	return nil
}
