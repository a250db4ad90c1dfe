package daemon

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
	"github.com/harness-dev/harness/internal/proctest"
	"github.com/harness-dev/harness/internal/supervise"
)

// TestScenario_UpstreamThatNeverInitializesFails: an upstream that starts
// but never answers initialize is ended after the connect timeout and
// counted as a failed start, so the unit degrades and then fails, latched,
// instead of being restarted after every timeout forever. The window rule
// is shrunk away: only failed starts in a row can degrade it here.
func TestScenario_UpstreamThatNeverInitializesFails(t *testing.T) {
	n, err := rand.Int(rand.Reader, big.NewInt(1e12))
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("100000.%012d", n) // a sleep only this test runs
	dir := t.TempDir()
	cfg := filepath.Join(dir, "harness.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
[mcp.mute]
cmd = "sleep"
args = [%q]
restart_delay = 0.05
`, tag)), 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "harness.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			ConfigPath: cfg, SocketPath: socket, StateDir: filepath.Join(dir, "state"), Version: "test",
			Limits: &supervise.Limits{CrashThreshold: 2, CrashWindow: time.Millisecond, MaxAttempts: 1,
				MinBackoff: 10 * time.Millisecond, Jitter: -1, StopGrace: time.Second},
			UpstreamConnectTimeout: 200 * time.Millisecond,
			Ready:                  func(api.Paths) { close(ready) },
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	c, err := client.Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var st []api.UpstreamStatus
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := c.Call(ctx, api.OpMCPStatus, nil, &st); err != nil {
			t.Fatal(err)
		}
		if len(st) == 1 && st[0].State == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream never failed: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(st[0].LastError, "initialize") {
		t.Fatalf("last_error %q does not say initialize failed", st[0].LastError)
	}
	var rs []struct {
		ExitCode *int    `json:"exit_code"`
		Ended    *string `json:"ended_at"`
	}
	if err := c.Call(ctx, api.OpRuns, map[string]string{"name": "mcp.mute"}, &rs); err != nil {
		t.Fatal(err)
	}
	// Two failed starts degrade it, one degraded attempt is allowed, the
	// third failed start gives up.
	if len(rs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(rs), rs)
	}
	for _, r := range rs {
		if r.Ended == nil {
			t.Fatalf("a run of the failed upstream has not ended: %+v", rs)
		}
	}
	if left := sleepersWith(tag); len(left) > 0 {
		t.Fatalf("processes of the failed upstream still run: %v", left)
	}
}

// sleepersWith lists live processes that have arg as an argument.
func sleepersWith(arg string) []int { return proctest.WithArg(arg) }
