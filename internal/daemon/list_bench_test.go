package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/client"
)

// fleetOf is a configuration of n harnesses that are not started.
func fleetOf(n int) string { return fleetWith(n, "") }

// fleetWith is a configuration of n sleepers, each with the keys in extra.
func fleetWith(n int, extra string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[harness.h%03d]\ncmd = \"sleep\"\nargs = [\"100000\"]\n%s\n", i, extra)
	}
	return b.String()
}

// BenchmarkList200 is the daemon's share of `harness list --json` on a
// 200-harness fleet: one list call on an open connection (decoded, and
// raw as `list --json` prints it), and a fresh connection per call as each
// CLI process makes (Dial + Call, and CallOnce, which the CLI uses).
func BenchmarkList200(b *testing.B) {
	socket, stop := startDaemon(b, fleetOf(200))
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	ctx := context.Background()
	b.Run("call", func(b *testing.B) {
		c, err := client.Dial(ctx, socket)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			var res []api.UnitInfo
			if err := c.Call(ctx, "list", struct{}{}, &res); err != nil || len(res) != 200 {
				b.Fatal(err, len(res))
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		c, err := client.Dial(ctx, socket)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			var res json.RawMessage
			if err := c.Call(ctx, "list", struct{}{}, &res); err != nil || len(res) == 0 {
				b.Fatal(err, len(res))
			}
		}
	})
	b.Run("dial+call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := client.Dial(ctx, socket)
			if err != nil {
				b.Fatal(err)
			}
			var res []api.UnitInfo
			if err := c.Call(ctx, "list", struct{}{}, &res); err != nil || len(res) != 200 {
				b.Fatal(err, len(res))
			}
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("once", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var res json.RawMessage
			if err := client.CallOnce(ctx, socket, "list", struct{}{}, &res); err != nil || len(res) == 0 {
				b.Fatal(err, len(res))
			}
		}
	})
}

// BenchmarkListRunning is `list --json`'s raw answer on an open
// connection at 1,000 running sleepers (the bench's part 2 fleet): rows
// with a process carry activity, idle time and an agent view.
func BenchmarkListRunning(b *testing.B) {
	const n = 1000
	socket, stop := startDaemon(b, fleetWith(n, "enabled = true\nstop_grace = 1\n"))
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	ctx := context.Background()
	c, err := client.Dial(ctx, socket)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for running := 0; running < n; {
		var res []api.UnitInfo
		if err := c.Call(ctx, "list", struct{}{}, &res); err != nil {
			b.Fatal(err)
		}
		running = 0
		for _, u := range res {
			if u.State == "running" {
				running++
			}
		}
		if running < n {
			time.Sleep(50 * time.Millisecond) // polling the setup, not timing
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var res json.RawMessage
		if err := c.Call(ctx, "list", struct{}{}, &res); err != nil || len(res) == 0 {
			b.Fatal(err, len(res))
		}
	}
}
