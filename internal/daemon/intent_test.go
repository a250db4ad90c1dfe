package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/supervise"
)

// daemonAt runs a daemon in-process on dir (so a test can restart it on
// the same state) and returns a client and a stop func.
func daemonAt(t *testing.T, dir string, limits *supervise.Limits) (*client.Client, func()) {
	t.Helper()
	socket := filepath.Join(dir, "harness.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			ConfigPath: filepath.Join(dir, "harness.toml"), SocketPath: socket, StateDir: filepath.Join(dir, "state"),
			Version: "test", Limits: limits, Ready: func(api.Paths) { close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	}
	c, err := client.Dial(context.Background(), socket)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return c, func() {
		c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func withTimeout(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s (deadlock?)", what, d)
	}
}

// A reload must not wait on a unit's actor while that actor waits for
// control in its event callback.
func TestReloadRacingACrashLoopingUnitNeverDeadlocks(t *testing.T) {
	dir := t.TempDir()
	cfg := func(desc string) string {
		return fmt.Sprintf("[harness.flap]\ncmd = \"sh\"\nargs = [\"-c\", \"exit 1\"]\nrestart_delay = 0\nenabled = true\ndescription = %q\n", desc)
	}
	os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(cfg("v0")), 0o600)
	limits := &supervise.Limits{CrashThreshold: 1 << 20, MaxAttempts: 1 << 20}
	c, stop := daemonAt(t, dir, limits)
	for i := 1; i <= 30; i++ {
		os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(cfg(fmt.Sprintf("v%d", i))), 0o600)
		withTimeout(t, 10*time.Second, "reload", func() {
			if err := c.Call(context.Background(), "reload", nil, nil); err != nil {
				t.Errorf("reload %d: %v", i, err)
			}
		})
	}
	withTimeout(t, 30*time.Second, "shutdown", stop)
}

// stop --all persists every unit's intent, whatever order the actors'
// state changes arrive in, and a restarted daemon honours it.
func TestStopAllIntentSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "[harness.s%02d]\ncmd = \"sleep\"\nargs = [\"100000\"]\nenabled = true\nstop_grace = 1\n\n", i)
	}
	os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(b.String()), 0o600)
	c, stop := daemonAt(t, dir, nil)
	waitAll := func(c *client.Client, state string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			var list []api.UnitInfo
			if err := c.Call(context.Background(), "list", nil, &list); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, u := range list {
				if u.State == state {
					n++
				}
			}
			if n == 30 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of 30 %s", n, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAll(c, "running")
	if err := c.Call(context.Background(), "stop", map[string]bool{"all": true}, nil); err != nil {
		t.Fatal(err)
	}
	stop()
	raw, err := os.ReadFile(filepath.Join(dir, "state", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st control.State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	for name, on := range st.Enabled {
		if on {
			t.Errorf("%s persisted as enabled after stop --all", name)
		}
	}
	c, stop = daemonAt(t, dir, nil)
	defer stop()
	waitAll(c, "stopped")
}

// project_down waits for its own units only, never for a slow global unit
// a reload is still stopping; concurrent reloads and downs do not collide.
func TestProjectDownWaitsForItsOwnUnitsOnly(t *testing.T) {
	dir := t.TempDir()
	slow := "[harness.slow]\ncmd = \"sh\"\nargs = [\"-c\", \"trap '' TERM; while true; do sleep 0.1; done\"]\nenabled = true\nstop_grace = 4\n"
	os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(slow), 0o600)
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o700)
	os.WriteFile(filepath.Join(proj, "harness.toml"), []byte("[harness.agent]\ncmd = \"sleep\"\nargs = [\"100000\"]\n"), 0o600)
	c, stop := daemonAt(t, dir, nil)
	defer stop()
	ctx := context.Background()
	if err := c.Call(ctx, "project_up", map[string]string{"path": filepath.Join(proj, "harness.toml")}, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "harness.toml"), nil, 0o600)
	if err := c.Call(ctx, "reload", nil, nil); err != nil { // slow starts its 4 s stop
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 3)
	go func() { done <- c.Call(ctx, "project_down", map[string]string{"name": "proj"}, nil) }()
	go func() { done <- c.Call(ctx, "reload", nil, nil) }()
	go func() { done <- c.Call(ctx, "reload", nil, nil) }()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("project_down took %s: it waited for a unit that is not its own", d)
	}
}
