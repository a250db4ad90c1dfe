package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/proctest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startDaemon runs a daemon in-process on temp dirs and returns its socket
// and a func that stops it and waits for Run to return.
func startDaemon(t testing.TB, config string) (socket string, stop func() error) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	socket = filepath.Join(dir, "harness.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			ConfigPath: cfg, SocketPath: socket, StateDir: filepath.Join(dir, "state"), Version: "test",
			Ready: func(api.Paths) { close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	}
	return socket, func() error { cancel(); return <-done }
}

func TestRun_ServesAndShutsDownWithoutLeaks(t *testing.T) {
	socket, stop := startDaemon(t, `
[daemon]
watch_config = true

[harness.sleeper]
cmd = "sleep"
args = ["100000"]
enabled = true
stop_grace = 1
`)
	ctx := context.Background()
	c, err := client.Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	var list []api.UnitInfo
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Call(ctx, "list", nil, &list); err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleeper never ran: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := list[0].PID
	err = c.Call(ctx, "describe", map[string]string{"name": "ghost"}, nil)
	if !errors.Is(err, errcode.ErrUnknownHarness) {
		t.Fatalf("describe ghost: %v", err)
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if proctest.Alive(pid) {
		t.Fatalf("harness pid %d outlived the daemon", pid)
	}
}

func TestRun_SecondDaemonOnTheSameSocketRefuses(t *testing.T) {
	socket, stop := startDaemon(t, "")
	defer stop()
	dir := t.TempDir()
	err := Run(context.Background(), Options{ConfigPath: filepath.Join(dir, "none.toml"), SocketPath: socket, StateDir: filepath.Join(dir, "state")})
	if err == nil {
		t.Fatal("a second daemon started on a served socket")
	}
	c, err := client.Dial(context.Background(), socket)
	if err != nil {
		t.Fatalf("the first daemon stopped serving: %v", err)
	}
	c.Close()
}
