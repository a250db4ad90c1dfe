package protocol_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/protocol"
)

func TestDefaultPaths(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1")
	t.Setenv("XDG_STATE_HOME", "/st")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	sock, state, cfg := protocol.DefaultPaths()
	if sock != "/run/user/1/harness/harness.sock" || state != "/st/harness" || cfg != "/cfg/harness/harness.toml" {
		t.Fatalf("XDG: %s %s %s", sock, state, cfg)
	}

	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "relative/is/ignored")
	sock, state, cfg = protocol.DefaultPaths()
	if state != "/home/u/.local/state/harness" || cfg != "/home/u/.config/harness/harness.toml" ||
		sock != "/home/u/.local/state/harness/harness.sock" {
		t.Fatalf("fallbacks: %s %s %s", sock, state, cfg)
	}
}

func TestListenModesAndStaleSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "harness")
	sock := filepath.Join(dir, "h.sock")

	// A stale socket: bound, closed without unlinking, nobody listening.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	ln, err := protocol.Listen(sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket mode %v (%v), want 0600 socket", fi.Mode(), err)
	}

	// Listen creates a missing directory 0700.
	fresh := filepath.Join(t.TempDir(), "new", "dir", "h.sock")
	ln2, err := protocol.Listen(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	if fi, err := os.Stat(filepath.Dir(fresh)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created dir mode %v (%v), want 0700", fi.Mode(), err)
	}
}

func TestListenRefusesLiveSocket(t *testing.T) {
	sock, _ := startServer(t, newFake(), nil)
	if ln, err := protocol.Listen(sock); !errors.Is(err, protocol.ErrAlreadyRunning) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("Listen on a live socket: %v, want ErrAlreadyRunning", err)
	}
	// The live daemon was not disturbed.
	r := dialRaw(t, sock)
	r.hello(protocol.ModeControl)
	if resp := r.call(1, "echo"); resp.Error != nil {
		t.Fatalf("live server after refused Listen: %+v", resp.Error)
	}
}

func TestListenLeavesNonSocketAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ln, err := protocol.Listen(path); err == nil {
		ln.Close()
		t.Fatal("Listen replaced a regular file")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "precious" {
		t.Fatalf("file after Listen: %q %v", b, err)
	}
}

func TestAcquireLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "h.sock.lock")
	release, err := protocol.AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want our pid", b, err)
	}
	// flock is per open file description, so a second open in this process
	// competes exactly like a second daemon would.
	if _, err := protocol.AcquireLock(path); !errors.Is(err, protocol.ErrAlreadyRunning) ||
		!strings.Contains(err.Error(), "another daemon holds "+path) {
		t.Fatalf("second AcquireLock: %v, want ErrAlreadyRunning naming the path", err)
	}
	release()
	release() // idempotent
	again, err := protocol.AcquireLock(path)
	if err != nil {
		t.Fatalf("AcquireLock after release: %v", err)
	}
	again()
}
