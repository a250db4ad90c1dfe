// Package fleettest is the test kit of the tests that drive a real daemon
// through its CLI, the way a user does: cmd/harness's end-to-end tests and
// interop. Each keeps its own fleet (how it builds the binary and starts
// the daemon differ); the CLI verbs, the polling wait and the stop are
// this package's. It is imported by tests only.
package fleettest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
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
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			c.T.Fatalf("timed out after %s waiting for %s\ndaemon log:\n%s", d, what, c.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c CLI) log() string {
	if c.Log == nil {
		return "(not kept)"
	}
	return c.Log()
}

// Stop ends a daemon with SIGTERM unless exited is already closed, and
// waits for exited; after 30 s it kills the daemon and fails the test.
func Stop(t testing.TB, p *os.Process, exited <-chan struct{}, log func() string) {
	t.Helper()
	if p == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		p.Kill()
		<-exited
		text := "(not kept)"
		if log != nil {
			text = log()
		}
		t.Errorf("daemon did not exit within 30s of SIGTERM\nlog:\n%s", text)
	}
}
