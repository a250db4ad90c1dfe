package protocol

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
	"golang.org/x/sys/unix"
)

var pid = os.Getpid()

// ErrAlreadyRunning says another daemon holds the lock or serves the socket.
var ErrAlreadyRunning = errors.New("another daemon is running")

// DefaultPaths returns the default socket path, state directory and config
// file (docs/design/wire.md): $XDG_RUNTIME_DIR/harness/harness.sock (under the state
// dir when there is no runtime dir), $XDG_STATE_HOME/harness and
// $XDG_CONFIG_HOME/harness/harness.toml, with the usual ~/.local/state and
// ~/.config fallbacks. Relative XDG values are ignored, as the XDG spec asks.
// The --flag and HARNESS_* overrides are the caller's to apply.
func DefaultPaths() (socket, stateDir, config string) {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		// No home: a per-user directory under the temp dir still keeps
		// users apart.
		home = filepath.Join(os.TempDir(), "harness-"+strconv.Itoa(os.Getuid()))
	}
	stateDir = filepath.Join(xdg("XDG_STATE_HOME", filepath.Join(home, ".local", "state")), "harness")
	config = filepath.Join(xdg("XDG_CONFIG_HOME", filepath.Join(home, ".config")), "harness", "harness.toml")
	if rt := xdg("XDG_RUNTIME_DIR", ""); rt != "" {
		socket = filepath.Join(rt, "harness", "harness.sock")
	} else {
		socket = filepath.Join(stateDir, "harness.sock")
	}
	return socket, stateDir, config
}

func xdg(env, fallback string) string {
	if v := os.Getenv(env); v != "" && filepath.IsAbs(v) {
		return v
	}
	return fallback
}

// AcquireLock takes an exclusive, non-blocking flock on the file at path
// (creating it and its directory, 0700/0600), so that only one daemon runs
// per socket; pass e.g. socket+".lock". The lock dies with the process, so
// a crashed daemon never leaves it held. When another process holds it the
// error wraps ErrAlreadyRunning and names path. release unlocks; the file
// stays, because removing it would let two daemons lock different inodes.
func AcquireLock(path string) (release func(), err error) {
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		cerr := f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another daemon holds %s: %w", path, ErrAlreadyRunning)
		}
		return nil, errors.Join(fmt.Errorf("lock %s: flock: %w", path, err), cerr)
	}
	// The pid is for a human reading the file; the flock is the truth.
	if err := f.Truncate(0); err != nil {
		return nil, errors.Join(fmt.Errorf("lock %s: truncate: %w", path, err), f.Close())
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0); err != nil {
		return nil, errors.Join(fmt.Errorf("lock %s: write pid: %w", path, err), f.Close())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Closing the descriptor releases the flock.
			if err := f.Close(); err != nil {
				slog.Warn("protocol: release lock", logkey.Path, path, logkey.Err, err)
			}
		})
	}, nil
}

// mkdirPrivate creates dir 0700 when it is missing. An existing directory
// keeps its mode: --socket may point into a shared directory such as /tmp.
func mkdirPrivate(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll honours the umask, which may be looser than 0700 wants.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	return nil
}

// staleProbeTimeout bounds the dial that asks whether a socket file is live.
const staleProbeTimeout = 2 * time.Second

// Listen binds the control socket at path (directory 0700 when created,
// socket 0600). An existing socket file is dialled first: if anything
// answers, Listen refuses with ErrAlreadyRunning and leaves it alone; only
// a refused connection proves the file stale, and then it is removed. A
// path that exists but is not a socket is never removed.
func Listen(path string) (net.Listener, error) {
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := clearStale(path); err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	// The socket file is born with the umask's mode; until the chmod
	// below, nobody but the owner may connect, whatever the umask and
	// however shared the directory.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("listen %s: chmod: %w", path, err), ln.Close())
	}
	return ln, nil
}

func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat existing socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; not touching it", path)
	}
	nc, err := net.DialTimeout("unix", path, staleProbeTimeout)
	if err == nil {
		if cerr := nc.Close(); cerr != nil {
			return errors.Join(fmt.Errorf("a daemon is serving %s: %w", path, ErrAlreadyRunning), cerr)
		}
		return fmt.Errorf("a daemon is serving %s: %w", path, ErrAlreadyRunning)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("probe existing socket (left in place): %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}
