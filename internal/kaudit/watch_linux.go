package kaudit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/logkey"
)

// typeConfigChange is AUDIT_CONFIG_CHANGE: "op=set audit_enabled=0 …" when
// audit is turned off (turning it on from off is not logged).
const typeConfigChange = 1305

// Watcher follows audit's Landlock records for the runs watched. One
// goroutine owns its sockets; Close stops it.
type Watcher struct {
	t      *tracker
	opt    Options
	logger *slog.Logger
	status atomic.Pointer[Status]

	mc   *os.File // the multicast socket, read by the goroutine (poller-backed: Close ends a read)
	ctl  int      // the request socket for AUDIT_GET; -1 without
	seq  uint32
	done chan struct{}
	once sync.Once
}

// Start joins audit's read-log group when the daemon may, and follows it
// until Close. It never fails: when the records cannot be read, Status
// says why and Watch follows nothing.
func Start(logger *slog.Logger, opt Options) *Watcher {
	opt.defaults()
	w := &Watcher{t: newTracker(opt.Now), opt: opt, logger: logger, ctl: -1, done: make(chan struct{})}
	if why := namespaceWhy(); why != "" {
		w.setStatus(Status{Why: why})
		logger.Info("kaudit: file refusals not counted", logkey.Reason, why)
		close(w.done)
		return w
	}
	mc, err := joinReadLog()
	if err != nil {
		why := WhyUnreadable
		if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ENOENT) {
			why = WhyNoAudit
		}
		w.setStatus(Status{Why: why})
		logger.Info("kaudit: file refusals not counted", logkey.Err, err)
		close(w.done)
		return w
	}
	w.mc = mc
	if fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT); err == nil {
		tv := unix.Timeval{Sec: 2}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		w.ctl = fd
	}
	w.refresh()
	go w.run()
	return w
}

// The inodes of the system's first pid namespace (PROC_PID_INIT_INO,
// fixed since Linux 3.8) and network namespace (PROC_NET_INIT_INO, fixed
// since 6.18; numbered like any other before).
const (
	procPidInitIno = 0xEFFFFFFC
	procNetInitIno = 0xEFFFFFF9
)

// namespaceWhy says why audit's records are of no use to this process,
// "" when they are (or when it cannot tell): they name pids of the
// system's first pid namespace, and the kernel multicasts them only to
// sockets of its first network namespace.
func namespaceWhy() string {
	var self, init unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &self) == nil && self.Ino != procPidInitIno {
		return WhyPidNamespace
	}
	if unix.Stat("/proc/self/ns/net", &self) != nil || self.Ino == procNetInitIno {
		return ""
	}
	// Pid 1's, where it may be read (not always, even as root).
	if unix.Stat("/proc/1/ns/net", &init) == nil {
		if self.Ino != init.Ino {
			return WhyNetNamespace
		}
		return ""
	}
	if kernelAtLeast(6, 18) {
		return WhyNetNamespace
	}
	return ""
}

// kernelAtLeast reports whether the running kernel's version is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// joinReadLog opens a netlink audit socket in the read-log multicast
// group, non-blocking so that the runtime's poller reads it and a Close
// ends a pending read.
func joinReadLog() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("audit socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("join audit's read-log group: %w", err)
	}
	// A burst of other records must not drop ours: a larger buffer where
	// the daemon may have it (root), the default otherwise.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	}
	return os.NewFile(uintptr(fd), "audit-readlog"), nil
}

// Status is whether file refusals are counted now.
func (w *Watcher) Status() Status { return *w.status.Load() }

func (w *Watcher) setStatus(s Status) { w.status.Store(&s) }

// Watch follows the run whose main process is pid, spawned at since (the
// wall clock: the kernel's records are stamped by it), telling on each
// file refusal of the Landlock domain that process allocated, until
// stop. on runs on the Watcher's goroutine or the caller's: it must be
// quick and must not block.
func (w *Watcher) Watch(pid int, since time.Time, on func(Denial)) (stop func()) {
	if w.mc == nil {
		return func() {}
	}
	return w.t.add(pid, since, on)
}

// Close stops the goroutine and closes the sockets; it waits for the
// goroutine to end.
func (w *Watcher) Close() {
	w.once.Do(func() {
		if w.mc == nil {
			return
		}
		w.mc.Close() // ends the pending read
		<-w.done
		if w.ctl >= 0 {
			unix.Close(w.ctl)
		}
		w.setStatus(Status{Why: WhyClosed})
	})
}

func (w *Watcher) run() {
	defer close(w.done)
	buf := make([]byte, 1<<16)
	lastPoll := time.Now()
	overruns := 0
	for {
		_ = w.mc.SetReadDeadline(time.Now().Add(w.opt.Poll))
		n, err := w.mc.Read(buf)
		if time.Since(lastPoll) >= w.opt.Poll {
			lastPoll = time.Now()
			w.refresh()
			w.t.expire()
			if overruns > 0 {
				// Said once a poll, not per overrun: a flood of other
				// records must not flood the log too.
				w.logger.Warn("kaudit: audit records lost, some file refusals uncounted (the socket's buffer overran)", logkey.Count, overruns)
				overruns = 0
			}
		}
		switch {
		case err == nil:
			w.handle(buf[:n])
		case errors.Is(err, os.ErrDeadlineExceeded):
		case errors.Is(err, os.ErrClosed):
			return
		case errors.Is(err, unix.ENOBUFS):
			overruns++
		default:
			w.logger.Error("kaudit: read audit records", logkey.Err, err)
			w.setStatus(Status{Why: WhyReadFailed})
			return
		}
	}
}

// handle takes one datagram of records.
func (w *Watcher) handle(b []byte) {
	for _, m := range splitMessages(b) {
		switch m.typ {
		case TypeLandlockAccess:
			w.sawRecord()
			a, err := ParseAccess(m.text)
			if err != nil {
				w.logger.Warn("kaudit: landlock record", logkey.Err, err)
				continue
			}
			w.t.access(a)
		case TypeLandlockDomain:
			w.sawRecord()
			d, err := ParseDomain(m.text)
			if err != nil {
				w.logger.Warn("kaudit: landlock record", logkey.Err, err)
				continue
			}
			w.t.domainRecord(d)
		case typeConfigChange:
			if _, kv, err := fields(m.text); err == nil && kv["op"] == "set" && kv["audit_enabled"] == "0" {
				w.setStatus(Status{Why: WhyAuditOff})
			}
		}
	}
}

// sawRecord: a record came, so audit is on.
func (w *Watcher) sawRecord() {
	if s := w.Status(); !s.Counting {
		w.setStatus(Status{Counting: true})
	}
}

// refresh asks audit whether it is on.
func (w *Watcher) refresh() {
	on, err := w.enabled()
	switch {
	case err != nil:
		w.setStatus(Status{Counting: true, Why: WhyUnknown})
	case on:
		w.setStatus(Status{Counting: true})
	default:
		w.setStatus(Status{Why: WhyAuditOff})
	}
}

// enabled asks the kernel for audit's status (AUDIT_GET): enabled is 1,
// or 2 when locked on.
func (w *Watcher) enabled() (bool, error) {
	if w.ctl < 0 {
		return false, errors.New("no request socket")
	}
	w.seq++
	hdr := unix.NlMsghdr{Len: unix.NLMSG_HDRLEN, Type: unix.AUDIT_GET, Flags: unix.NLM_F_REQUEST, Seq: w.seq}
	req := (*[unix.NLMSG_HDRLEN]byte)(unsafe.Pointer(&hdr))[:]
	if err := unix.Sendto(w.ctl, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("audit get: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(w.ctl, buf, 0)
		if err != nil {
			return false, fmt.Errorf("audit get: %w", err)
		}
		if on, done, err := statusReply(buf[:n], w.seq); done {
			return on, err
		}
	}
}

// statusReply reads a reply to AUDIT_GET number seq: done when it is the
// status (on: enabled) or an error.
func statusReply(b []byte, seq uint32) (on, done bool, err error) {
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		if l < nlmsgHdrLen || l > len(b) {
			return false, false, nil
		}
		typ := binary.NativeEndian.Uint16(b[4:6])
		data := b[nlmsgHdrLen:l]
		if binary.NativeEndian.Uint32(b[8:12]) == seq {
			switch {
			case typ == unix.NLMSG_ERROR && len(data) >= 4:
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return false, true, fmt.Errorf("audit get: %w", unix.Errno(-e))
				}
			case typ == unix.AUDIT_GET && len(data) >= 8:
				// struct audit_status: mask, enabled, …
				return binary.NativeEndian.Uint32(data[4:8]) != 0, true, nil
			}
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return false, false, nil
}
