package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ExitSetup is the shim's exit status when the sandbox cannot be set up:
// the program never runs unconfined.
const ExitSetup = 126

// init runs the shim as soon as this package is initialised, when the
// binary was started as `harness sandbox-exec ...`: before the packages
// that sort after it (most of the daemon's, and the heavy third-party
// ones) are initialised, which would add their start-up to every
// sandboxed spawn (docs/design/sandbox.md). It never returns then.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Exec(os.Args[2:]))
	}
}

// Exec is the shim, `harness sandbox-exec SPEC PROG ARGV0 ARGS...`: it
// applies SPEC and execs PROG with ARGV0 ARGS... in its place. It returns
// only on failure, with the exit status.
func Exec(args []string) int {
	if len(args) == 1 && args[0] == "--probe" {
		return probeChild()
	}
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "harness sandbox: usage: sandbox-exec SPEC PROG ARGV0 [ARGS...]")
		return 2
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fail(fmt.Errorf("spec: %w", err))
	}
	if err := apply(spec, args[1]); err != nil {
		return fail(err)
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	return fail(fmt.Errorf("exec %s: %w", args[1], err))
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "harness sandbox: %v; not started\n", err)
	return ExitSetup
}

// apply sets the sandbox up in this process, which the exec keeps: prog
// is the program it will exec.
func apply(spec Spec, prog string) error {
	if spec.Net != "" {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("network namespace: %w", err)
		}
		if spec.Net == NetAllow {
			if err := handOverListener(); err != nil {
				return fmt.Errorf("egress proxy: %w", err)
			}
		}
	}
	if spec.Tmp != "" {
		// Before Landlock, which forbids changing the mounts.
		if err := privateTmp(spec); err != nil {
			return fmt.Errorf("private /tmp: %w", err)
		}
		spec.RW = append(spec.RW, tmpPath)
	}
	if spec.FS {
		if err := restrictFiles(spec); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	return nil
}

// loopbackUp brings up lo, which a new network namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// handOverListener listens on the proxy's address inside the namespace
// and sends the listener to the daemon over fd 3, which it then closes:
// the daemon serves the proxy on it, so no process of ours stays behind.
func handOverListener() error {
	ch := os.NewFile(3, "sandbox-channel")
	if ch == nil {
		return errors.New("no channel on fd 3")
	}
	defer ch.Close()
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ProxyPort))
	if err != nil {
		return err
	}
	defer l.Close()
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Sendmsg(3, []byte{1}, unix.UnixRights(int(lf.Fd())), nil, 0); err != nil {
		return fmt.Errorf("send the listener: %w", err)
	}
	return nil
}

// Landlock file access rights (include/uapi/linux/landlock.h).
const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	listRights = unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are the rights that apply to a file, not a directory.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handled is every file access right Landlock ABI abi knows: all of them
// are denied unless a rule grants them.
func handled(abi int) uint64 {
	h := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // ABI 1
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrictFiles applies the Landlock ruleset to this thread, the one that
// execs: read everything but Deny, write the workdir, RW and /dev, nothing
// else. Only the exec'ing thread needs the domain (the exec ends the
// others), so it is applied with plain syscalls on a locked thread rather
// than to every thread of the shim (docs/design/sandbox.md).
func restrictFiles(spec Spec) error {
	abi, err := ABI()
	if err != nil || abi < 1 {
		return fmt.Errorf("not available (%v)", err)
	}
	home := os.Getenv("HOME")
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("workdir: %w", err)
	}
	var deny []string
	for _, d := range spec.Deny {
		deny = append(deny, resolve(expandHome(d, home)))
	}
	for _, d := range spec.MakeDirs {
		_ = os.MkdirAll(expandHome(d, home), 0o700) // best effort: a missing one grants nothing
	}
	read, list := readRoots(deny)
	all := handled(abi)
	attr := struct{ handledFS uint64 }{all}
	// Only the first field: every ABI knows it, and the rest stays zero.
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))
	add := func(dirRights, fRights uint64, paths []string) error {
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				continue // a dangling entry grants nothing
			}
			rights := dirRights & all
			if !st.IsDir() {
				rights = fRights & all
			}
			if rights == 0 {
				continue
			}
			if err := addRule(int(rfd), p, rights); err != nil {
				return err
			}
		}
		return nil
	}
	rw := []string{wd, "/dev"}
	for _, p := range spec.RW {
		rw = append(rw, expandHome(p, home))
	}
	for _, r := range []struct {
		dir, file uint64
		paths     []string
	}{{readRights, readRights &^ listRights, read}, {readRights, readRights &^ listRights, spec.Read},
		{listRights, 0, list}, {all, fileRights, rw}} {
		if err := add(r.dir, r.file, r.paths); err != nil {
			return err
		}
	}
	runtime.LockOSThread() // never unlocked: this thread execs
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, restrictFlags(abi), 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// restrictFlags are landlock_restrict_self's flags for ABI abi. From ABI 7
// the kernel logs a domain's denials to audit, but by default only until
// the first execve in it, and the shim's whole point is to exec: so ask
// for the program's denials to be logged too (LOG_NEW_EXEC_ON), which is
// what lets the daemon count them (internal/kaudit). With audit
// off the kernel logs nothing whatever the flag (docs/design/sandbox.md).
func restrictFlags(abi int) uintptr {
	if abi >= 7 {
		return unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
	}
	return 0
}

// addRule grants rights beneath path.
func addRule(rfd int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	// struct landlock_path_beneath_attr, packed: the kernel reads 12 bytes.
	pb := struct {
		allowed  uint64
		parentFD int32
	}{rights, int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("rule for %s: %w", path, errno)
	}
	return nil
}

// ABI is the kernel's Landlock ABI version, 0 without Landlock.
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		if errno == unix.ENOSYS || errno == unix.EOPNOTSUPP {
			return 0, nil
		}
		return 0, errno
	}
	return int(v), nil
}

// probeNoMount is the probe's exit status when the namespaces work but a
// mount over /tmp in them does not.
const probeNoMount = 3

// probeChild is the shim's probe, run in new namespaces: it reports
// success when it can bring the loopback up and mount over /tmp (its own
// /tmp over itself: nothing changes, and the namespace ends with it).
func probeChild() int {
	if err := loopbackUp(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "make / private:", err)
		return probeNoMount
	}
	if err := unix.Mount(tmpPath, tmpPath, "", unix.MS_BIND, ""); err != nil {
		fmt.Fprintln(os.Stderr, "bind /tmp:", err)
		return probeNoMount
	}
	return 0
}
