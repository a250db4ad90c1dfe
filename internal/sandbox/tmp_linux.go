package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// privateTmp mounts spec.Tmp over /tmp in the shim's own mount namespace
// and points TMPDIR at it. Place chose the mount only when nothing the
// run needs lies below /tmp, save the harness binary, which is bound back
// read-only where it is: its `harness mcp` and hooks run from it.
// Nothing else of the shared /tmp stays in sight.
func privateTmp(spec Spec) error {
	if st, err := os.Lstat(tmpPath); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", tmpPath)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	exe, fd := "", -1
	if p, err := self(); err == nil && within(resolve(p), tmpPath) {
		// A handle on it, taken before /tmp is covered.
		exe = resolve(p)
		if fd, err = unix.Open(exe, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("open %s: %w", exe, err)
		}
		defer unix.Close(fd)
	}
	if err := os.MkdirAll(spec.Tmp, 0o700); err != nil {
		return err
	}
	if err := unix.Mount(spec.Tmp, tmpPath, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over %s: %w", spec.Tmp, tmpPath, err)
	}
	if exe != "" {
		if err := bindReadOnly(exe, fd); err != nil {
			return err
		}
	}
	return os.Setenv("TMPDIR", tmpPath)
}

// bindReadOnly binds the file fd holds back at its path p, read-only:
// the private /tmp's rule lets the run write below /tmp, the mount does
// not let it write the harness binary.
func bindReadOnly(p string, fd int) error {
	src := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o500)
	if err != nil {
		return err
	}
	f.Close()
	if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s back: %w", p, err)
	}
	// A remount in a user namespace must keep the flags the mount
	// already has (ST_ and MS_ flags share their values).
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|keep, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, err)
	}
	return nil
}
