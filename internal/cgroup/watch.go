//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/harness-dev/harness/internal/logkey"
	"golang.org/x/sys/unix"
)

// watcher turns the kernel's "file modified" events on cgroup.events into
// wake-ups. One inotify instance serves a whole subtree: instances are a
// scarce per-user resource (128 by default), watches are not.
type watcher struct {
	f    *os.File // the inotify descriptor, read through Go's poller
	fd   int      // the same descriptor: f.Fd() would make it blocking
	done chan struct{}

	mu      sync.Mutex
	watches map[int32]*watch
}

type watch struct {
	wd   int32
	subs map[chan struct{}]struct{} // each buffered 1: a pending kick
}

func newWatcher() (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cgroup: inotify: %w", err)
	}
	w := &watcher{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, done: make(chan struct{}), watches: map[int32]*watch{}}
	go w.read()
	return w, nil
}

func (w *watcher) close() error {
	err := w.f.Close()
	<-w.done
	if err != nil {
		return fmt.Errorf("cgroup: close inotify: %w", err)
	}
	return nil
}

// read wakes the subscribers of every watch an event names, until the
// descriptor is closed.
func (w *watcher) read() {
	defer close(w.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				slog.Default().Error("cgroup: read inotify", logkey.Err, err)
				w.kickAll() // waiters fall back to re-reading their files
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			w.kick(ev.Wd, ev.Mask&unix.IN_IGNORED != 0)
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// kick wakes wd's subscribers; gone says the kernel dropped the watch
// (the cgroup was removed).
func (w *watcher) kick(wd int32, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.watches[wd]
	if x == nil {
		return
	}
	for ch := range x.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if gone {
		delete(w.watches, wd)
	}
}

func (w *watcher) kickAll() {
	w.mu.Lock()
	wds := make([]int32, 0, len(w.watches))
	for wd := range w.watches {
		wds = append(wds, wd)
	}
	w.mu.Unlock()
	for _, wd := range wds {
		w.kick(wd, false)
	}
}

func (w *watcher) subscribe(dir string) (int32, chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(dir, "cgroup.events"), unix.IN_MODIFY)
	if err != nil {
		return 0, nil, fmt.Errorf("cgroup: watch %s: %w", dir, err)
	}
	x := w.watches[int32(wd)]
	if x == nil {
		x = &watch{wd: int32(wd), subs: map[chan struct{}]struct{}{}}
		w.watches[x.wd] = x
	}
	ch := make(chan struct{}, 1)
	x.subs[ch] = struct{}{}
	return x.wd, ch, nil
}

func (w *watcher) unsubscribe(wd int32, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.watches[wd]
	if x == nil {
		return // the kernel dropped it already
	}
	delete(x.subs, ch)
	if len(x.subs) > 0 {
		return
	}
	delete(w.watches, wd)
	if _, err := unix.InotifyRmWatch(w.fd, uint32(wd)); err != nil && !errors.Is(err, unix.EINVAL) {
		slog.Default().Warn("cgroup: remove inotify watch", logkey.Err, err)
	}
}

// waitEmpty blocks until dir holds no process (or is gone) or done closes.
// The watch is in place before the first read, so a change between the
// read and the sleep still wakes it.
func (w *watcher) waitEmpty(dir string, done <-chan struct{}) error {
	// Most runs are over by the time anyone waits (the main process was
	// reaped, nothing else was in the leaf): answer without a watch,
	// whose add and removal serialise on w.mu (a stop of 1,000 units had
	// 300 waiters queued there).
	if busy, err := populated(dir); errors.Is(err, fs.ErrNotExist) || (err == nil && !busy) {
		return nil
	}
	wd, kick, err := w.subscribe(dir)
	var tick <-chan time.Time
	if err != nil {
		// No watch to be had (max_user_watches): poll instead.
		slog.Default().Warn("cgroup: polling for an empty cgroup", logkey.Dir, dir, logkey.Err, err)
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		tick = t.C
	} else {
		defer w.unsubscribe(wd, kick)
	}
	for {
		busy, err := populated(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !busy {
			return nil
		}
		select {
		case <-kick:
		case <-tick:
		case <-done:
			return ErrWaitCancelled
		}
	}
}
