// Package fleettest is the test kit of the tests that drive a real daemon
// through its CLI, the way a user does: cmd/harness's end-to-end tests and
// interop. Each keeps its own fleet (how it builds the binary, which
// environment and flags it gives the daemon and what it checks once it
// serves differ); the daemon's files and start, the CLI verbs, the
// polling wait and the stop are this package's. It is imported by tests
// only.
package fleettest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// CLI runs the harness binary against one daemon's socket.
type CLI struct {
	T      testing.TB
	Bin    string
	Socket string
	// Env is the CLI's environment (nil: this process's).
	Env []string
	// Log returns the daemon's log, shown when something fails; nil shows
	// none.
	Log func() string
}

// Run invokes `harness --socket SOCKET args...` and returns what it
// printed and its exit status; a CLI that cannot be run fails the test.
func (c CLI) Run(args ...string) (stdout, stderr string, code int) {
	c.T.Helper()
	cmd := exec.Command(c.Bin, append([]string{"--socket", c.Socket}, args...)...)
	cmd.Env = c.Env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			c.T.Fatalf("run harness %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

// MustRun runs a verb that must succeed and returns its stdout.
func (c CLI) MustRun(args ...string) string {
	c.T.Helper()
	out, errOut, code := c.Run(args...)
	if code != 0 {
		c.T.Fatalf("harness %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// MustJSON runs a --json verb that must succeed and decodes its output
// into v.
func (c CLI) MustJSON(v any, args ...string) {
	c.T.Helper()
	out := c.MustRun(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.T.Fatalf("harness %v --json: decode %q: %v", args, out, err)
	}
}

// WaitFor polls cond until it holds, failing the test after d with the
// daemon's log. The CLI has no push channel, so polling with a deadline
// is how a user waits too.
func (c CLI) WaitFor(what string, d time.Duration, cond func() bool) {
	c.T.Helper()
	c.WaitForExplained(what, d, cond, nil)
}

// WaitForExplained is WaitFor whose failure also says what explain
// returns then: what each side read, for a wait that timed out where it
// should not have.
func (c CLI) WaitForExplained(what string, d time.Duration, cond func() bool, explain func() string) {
	c.T.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			more := ""
			if explain != nil {
				more = "\n" + explain()
			}
			c.T.Fatalf("timed out after %s waiting for %s%s\ndaemon log:\n%s", d, what, more, c.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c CLI) log() string { return logText(c.Log) }

// logText is what log returns, or "(not kept)" when there is none.
func logText(log func() string) string {
	if log == nil {
		return "(not kept)"
	}
	return log()
}

// Stop ends a daemon with SIGTERM unless exited is already closed, and
// waits for exited; after 30 s it kills the daemon and fails the test.
// A daemon that had exited by itself, and not cleanly, under a failed
// test is the likeliest reason it failed (a CLI then reads only
// "connection lost"), so its exit status and the tails of its stderr and
// log are logged.
func Stop(t testing.TB, cmd *exec.Cmd, exited <-chan struct{}, stderr *SyncBuffer, log func() string) {
	t.Helper()
	if cmd == nil || cmd.Process == nil {
		return
	}
	p := cmd.Process
	select {
	case <-exited:
		// Exit 0 is a stop: another cleanup of the test (a fleet's own
		// Stop) may have run first.
		if t.Failed() && !cmd.ProcessState.Success() {
			t.Logf("the daemon had exited before the test stopped it: %v\nstderr (tail):\n%s\nlog (tail):\n%s",
				cmd.ProcessState, tail(stderr.String(), 8<<10), tail(logText(log), 8<<10))
		}
		return
	default:
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		p.Kill()
		<-exited
		t.Errorf("daemon did not exit within 30s of SIGTERM\nlog:\n%s", logText(log))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// DaemonFiles are one daemon's files.
type DaemonFiles struct {
	Config, Socket, State, Log string
}

// FilesIn is the layout every kit uses under one temp dir: harness.toml,
// run/harness.sock, state/ and daemon.log.
func FilesIn(dir string) DaemonFiles {
	return DaemonFiles{
		Config: filepath.Join(dir, "harness.toml"),
		Socket: filepath.Join(dir, "run", "harness.sock"),
		State:  filepath.Join(dir, "state"),
		Log:    filepath.Join(dir, "daemon.log"),
	}
}

// Daemon is one started `harness daemon`.
type Daemon struct {
	Cmd *exec.Cmd
	// Exited is closed once the daemon has exited and been reaped.
	Exited chan struct{}
	Stderr *SyncBuffer
}

// DaemonStart is the serving deadline of StartDaemon.
const DaemonStart = 30 * time.Second

// StartDaemon runs `bin daemon` on files with env and extra args, and
// returns once ready holds (polled; ready asks the daemon through the
// CLI). A daemon that exits first, or is not ready within DaemonStart,
// fails the test with its stderr and log. The daemon dies with the test
// binary (a timeout panic) where the system can do that, and is stopped
// (Stop) at the test's cleanup if it still runs.
func StartDaemon(t testing.TB, bin string, files DaemonFiles, env []string, ready func() bool, args ...string) Daemon {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"daemon", "--config", files.Config, "--socket", files.Socket,
		"--state-dir", files.State, "--log-file", files.Log}, args...)...)
	cmd.Env = env
	d := Daemon{Cmd: cmd, Exited: make(chan struct{}), Stderr: &SyncBuffer{}}
	cmd.Stderr = d.Stderr
	cmd.SysProcAttr = withParentDeath(&syscall.SysProcAttr{})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(d.Exited) }()
	log := func() string { b, _ := os.ReadFile(files.Log); return string(b) }
	t.Cleanup(func() { Stop(t, cmd, d.Exited, d.Stderr, log) })
	deadline := time.Now().Add(DaemonStart)
	for {
		select {
		case <-d.Exited:
			t.Fatalf("daemon exited during start: %v\nstderr:\n%s\nlog:\n%s", cmd.ProcessState, d.Stderr.String(), log())
		default:
		}
		if ready() {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for the daemon to serve\nstderr:\n%s\nlog:\n%s", DaemonStart, d.Stderr.String(), log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SyncBuffer is a bytes.Buffer safe for a child's writer and a reader.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Fleet is one real daemon on temp dirs and the CLI against it: what
// cmd/harness's e2e fleet and interop's have in common. Each kit embeds it
// in its own fleet type, which adds its environment, flags and readiness
// check (Start's arguments) and its own helpers.
type Fleet struct {
	T *testing.T
	// Bin is the harness binary; Env the environment of the daemon and
	// the CLI.
	Bin string
	Env []string
	// Dir holds the daemon's files (FilesIn): Config, Socket, State and
	// LogPath.
	Dir                            string
	Config, Socket, State, LogPath string
	// Cmd, Exited and Stderr are the daemon's once started (Daemon).
	Cmd    *exec.Cmd
	Exited chan struct{}
	Stderr *SyncBuffer
}

// NewFleet is a fleet on dir's files (FilesIn), not yet started.
func NewFleet(t *testing.T, bin, dir string, env []string) *Fleet {
	files := FilesIn(dir)
	return &Fleet{T: t, Bin: bin, Env: env, Dir: dir,
		Config: files.Config, Socket: files.Socket, State: files.State, LogPath: files.Log}
}

// Files are the fleet's daemon files.
func (f *Fleet) Files() DaemonFiles {
	return DaemonFiles{Config: f.Config, Socket: f.Socket, State: f.State, Log: f.LogPath}
}

// WriteConfig replaces the daemon's config file (a reload applies it).
func (f *Fleet) WriteConfig(text string) {
	f.T.Helper()
	if err := os.WriteFile(f.Config, []byte(text), 0o600); err != nil {
		f.T.Fatal(err)
	}
}

// Start starts the daemon with extra args and returns once ready holds
// (StartDaemon).
func (f *Fleet) Start(ready func() bool, args ...string) {
	f.T.Helper()
	d := StartDaemon(f.T, f.Bin, f.Files(), f.Env, ready, args...)
	f.Cmd, f.Exited, f.Stderr = d.Cmd, d.Exited, d.Stderr
}

// Stop ends the daemon with SIGTERM, if one was started and still runs,
// and waits for it (Stop).
func (f *Fleet) Stop() {
	if f.Cmd == nil {
		return
	}
	Stop(f.T, f.Cmd, f.Exited, f.Stderr, f.Log)
}

// Log is the daemon's log so far.
func (f *Fleet) Log() string {
	b, _ := os.ReadFile(f.LogPath)
	return string(b)
}

// CLI is the CLI against this fleet's socket.
func (f *Fleet) CLI() CLI {
	return CLI{T: f.T, Bin: f.Bin, Socket: f.Socket, Env: f.Env, Log: f.Log}
}

// Run invokes the CLI against this fleet's socket (CLI.Run).
func (f *Fleet) Run(args ...string) (stdout, stderr string, code int) {
	f.T.Helper()
	return f.CLI().Run(args...)
}

// MustRun runs a verb that must succeed (CLI.MustRun).
func (f *Fleet) MustRun(args ...string) string {
	f.T.Helper()
	return f.CLI().MustRun(args...)
}

// MustJSON runs a --json verb that must succeed and decodes its output
// (CLI.MustJSON).
func (f *Fleet) MustJSON(v any, args ...string) {
	f.T.Helper()
	f.CLI().MustJSON(v, args...)
}

// WaitFor polls cond until it holds (CLI.WaitFor).
func (f *Fleet) WaitFor(what string, d time.Duration, cond func() bool) {
	f.T.Helper()
	f.CLI().WaitFor(what, d, cond)
}
