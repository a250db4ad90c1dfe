//go:build linux

// Package kaudittest sets the kernel's audit for a test: the tests of
// file refusals need audit on (and those of the "not counted" answer
// need it off), which only root may set, machine-wide. The daemon never
// does this (internal/kaudit only reads).
package kaudittest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harness-dev/harness/internal/testenv"
)

// lockPath is held by whichever test binary has set audit: the setting
// is the machine's, and packages' tests run at once.
var lockPath = filepath.Join(os.TempDir(), "harness-test-audit.lock")

// Set puts the kernel's audit on or off for t and back as it was when t
// ends, holding a lock across test binaries meanwhile. Where that cannot
// be done (not root, a container's pid namespace, a kernel without
// audit) t ends as testenv.Missing: skipped, or failed under HARNESS_CI.
func Set(t testing.TB, on bool) {
	t.Helper()
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("audit test lock: %v", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		t.Fatalf("audit test lock: %v", err)
	}
	t.Cleanup(func() { lock.Close() }) // releases the lock, after the restore below
	before, err := Enabled()
	if err != nil {
		testenv.Missing(t, "the kernel's audit, settable (root in the system's first pid namespace)", err.Error())
	}
	want := uint32(0)
	if on {
		want = 1
	}
	if err := setEnabled(want); err != nil {
		testenv.Missing(t, "the kernel's audit, settable (root in the system's first pid namespace)", err.Error())
	}
	t.Cleanup(func() {
		if err := setEnabled(before); err != nil {
			t.Errorf("audit not put back to enabled=%d: %v", before, err)
		}
	})
}

// Switch turns audit on or off again within a test that called Set (whose
// lock it relies on, and whose cleanup puts audit back).
func Switch(t testing.TB, on bool) {
	t.Helper()
	want := uint32(0)
	if on {
		want = 1
	}
	if err := setEnabled(want); err != nil {
		t.Fatalf("audit enabled=%d: %v", want, err)
	}
}

// Enabled is audit's enabled (0 off, 1 on, 2 locked on).
func Enabled() (uint32, error) {
	var enabled uint32
	err := request(unix.AUDIT_GET, nil, func(typ uint16, data []byte) bool {
		if typ == unix.AUDIT_GET && len(data) >= 8 {
			enabled = binary.NativeEndian.Uint32(data[4:8])
			return true
		}
		return false
	})
	return enabled, err
}

func setEnabled(v uint32) error {
	if v == 2 {
		return nil // locked: it cannot have changed
	}
	st := make([]byte, 8) // struct audit_status: mask, enabled
	binary.NativeEndian.PutUint32(st[0:], unix.AUDIT_STATUS_ENABLED)
	binary.NativeEndian.PutUint32(st[4:], v)
	return request(unix.AUDIT_SET, st, func(uint16, []byte) bool { return false })
}

// request sends one audit request with an ack asked for, passes each
// answer to got until it says done or the ack comes.
func request(typ uint16, payload []byte, got func(uint16, []byte) bool) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return fmt.Errorf("audit socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 5}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	hdr := unix.NlMsghdr{Len: uint32(unix.NLMSG_HDRLEN + len(payload)), Type: typ, Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK, Seq: 1}
	msg := append((*[unix.NLMSG_HDRLEN]byte)(unsafe.Pointer(&hdr))[:], payload...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("audit request %d: %w", typ, err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("audit request %d: %w", typ, err)
		}
		b := buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:4]))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				break
			}
			t := binary.NativeEndian.Uint16(b[4:6])
			data := b[unix.NLMSG_HDRLEN:l]
			if t == unix.NLMSG_ERROR && len(data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return fmt.Errorf("audit request %d: %w", typ, unix.Errno(-e))
				}
				return nil // the ack: done
			}
			if got(t, data) {
				return nil
			}
			b = b[min((l+3)&^3, len(b)):]
		}
	}
}
