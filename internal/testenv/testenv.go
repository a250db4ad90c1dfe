// Package testenv decides what a test does when something it drives for
// real is missing from the machine: a program (tmux, Chromium, sshd, an
// agent CLI), npm packages, or a kernel feature. On a developer's machine
// with Go alone the test skips, in one line naming what it needs; under
// HARNESS_CI=1 (scripts/test, CI) it fails instead, so a missing install
// step can never pass as green.
//
// The tiers are described in docs/design/testing.md.
package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// CIEnv names the variable that turns a missing dependency from a skip
// into a failure.
const CIEnv = "HARNESS_CI"

// CI reports whether missing dependencies fail the test (HARNESS_CI set to
// anything but "", "0", "false", "no" or "off").
func CI() bool {
	switch strings.ToLower(os.Getenv(CIEnv)) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}

// Missing ends t because what it needs is not here: a skip naming it, or
// under HARNESS_CI a failure. why is the reason it is missing (an error's
// text, say); it may be empty.
func Missing(t testing.TB, what, why string) {
	t.Helper()
	line, fail := Check(what, why)
	if fail {
		t.Fatal(line)
	}
	t.Skip(line)
}

// Program is the path of the program name on PATH, or ends t as Missing.
func Program(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name+" on PATH", "")
	}
	return p
}

// File is path when it exists, or ends t as Missing naming what (such as
// "Debian's chromium").
func File(t testing.TB, path, what string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, fmt.Sprintf("%s (%s)", what, path), "")
	}
	return path
}

// Check is the form of Missing for TestMain and other code without a
// *testing.T: it returns the line to print and whether the caller must
// fail (true under HARNESS_CI) rather than skip its tests.
func Check(what, why string) (line string, fail bool) {
	msg := "needs " + what
	if why != "" {
		msg += ": " + why
	}
	if CI() {
		return msg + " (" + CIEnv + "=1: a missing dependency fails; scripts/test installs it)", true
	}
	return msg + " (scripts/test installs it); skipping", false
}

// DirOutsideTmp is a new directory below the user's cache directory, not
// /tmp, removed when t ends: a sandboxed run gets a private /tmp only when
// nothing it needs (its fleet's files, HOME, workdir) lies below /tmp.
// prefix keeps its name short: a daemon's socket may go below it.
func DirOutsideTmp(t testing.TB, prefix string) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err == nil {
		err = os.MkdirAll(base, 0o700)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// SilentAddr is a loopback TCP address ("127.0.0.1:PORT") that accepts
// connections and never says a word: a client waiting for a greeting
// (an ssh banner, an HTTP answer) waits until its own deadline. The
// listener and every connection it took close at the test's end.
func SilentAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-accepted
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
