package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// notifyRounds is how many times part 8 fails the whole fleet at once.
const notifyRounds = 3

// runNotify is part 8: from a harness's failure to the request
// of a [notify.*] receiver, under o.Harnesses harnesses that all fail at
// once. Each message carries the event's time (the actor's clock when it
// emitted the event); the receiver, a local HTTP server in this process,
// takes the difference at arrival. The baseline is the same events on the
// event subscription (`subscribe`, what `harness top` reads), timed the
// same way, in the same run.
func runNotify(ctx context.Context, o options, bin, tmp string, rep *report) error {
	var mu sync.Mutex
	var viaNotify []time.Duration
	got := make(chan struct{}, 4*o.Harnesses)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var m struct {
			Event string    `json:"event"`
			Time  time.Time `json:"time"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) == nil && m.Event == "failed" {
			mu.Lock()
			viaNotify = append(viaNotify, at.Sub(m.Time))
			mu.Unlock()
			got <- struct{}{}
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Close()

	// Each harness blocks on a shared lock of a file the bench holds
	// exclusively, then fails (flock(1) runs false): when the bench lets
	// go, all fail at once. Blocking, not polling: 200 harnesses testing a
	// flag file every 50 ms were 4,000 forks a second, which took the
	// shared machine's load past 200 and made the daemon the slow part.
	lockPath := filepath.Join(tmp, "notify-fail-now.lock")
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	var b strings.Builder
	for i := range o.Harnesses {
		fmt.Fprintf(&b, "[harness.n%03d]\ncmd = \"flock\"\nargs = [\"-s\", %q, \"false\"]\nrestart = \"no\"\n", i, lockPath)
	}
	fmt.Fprintf(&b, "[notify.bench]\nurl = \"http://%s/hook\"\non = [\"failed\"]\ncooldown_s = 0\n", ln.Addr())
	d, err := startDaemon(ctx, o, bin, tmp, "notify", b.String())
	if err != nil {
		return err
	}
	defer d.close()
	events, stopEvents, err := d.subscribe(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	// The subscriber reads all the time, as `harness top` does, so it is
	// never the one that falls behind.
	var viaSub []time.Duration
	subFailed := make(chan struct{}, 4*o.Harnesses)
	go func() {
		for ev := range events {
			if ev.Kind == api.EventState && ev.State == "failed" {
				mu.Lock()
				viaSub = append(viaSub, time.Since(ev.Time))
				mu.Unlock()
				subFailed <- struct{}{}
			}
		}
	}()
	names := make([]string, o.Harnesses)
	for i := range names {
		names[i] = fmt.Sprintf("n%03d", i)
	}
	o.progress("part 8: %d rounds of %d harnesses failing at once", notifyRounds, o.Harnesses)
	for round := range notifyRounds {
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return err
		}
		if out, err := d.cli(ctx, append([]string{"start"}, names...)...); err != nil {
			return fmt.Errorf("start: %w: %s", err, out)
		}
		if err := d.waitRunning(ctx, o.Harnesses, 60*time.Second); err != nil {
			return err
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
			return err
		}
		timeout := time.After(60 * time.Second)
		for _, ch := range []chan struct{}{subFailed, got} {
			for n := 0; n < o.Harnesses; n++ {
				select {
				case <-ch:
				case <-timeout:
					return fmt.Errorf("round %d: %d of %d failures seen", round, n, o.Harnesses)
				}
			}
		}
	}
	var info api.DaemonInfo
	if err := d.ctl.Call(ctx, api.OpDaemonInfo, struct{}{}, &info); err != nil {
		return err
	}
	mu.Lock()
	n, s := summarize(viaNotify), summarize(viaSub)
	mu.Unlock()
	part := fmt.Sprintf("8 (%d harnesses failing at once, %d rounds)", o.Harnesses, notifyRounds)
	rep.metric(part, "event -> subscriber (baseline)", "p50 %s, p99 %s, %d events", s.P50, s.P99, s.N)
	dropped := uint64(0)
	for _, st := range info.Notify {
		dropped += st.Dropped + st.Failed
	}
	rep.metric(part, "event -> notify receiver's request", "p50 %s, p99 %s (%sx the subscriber's p99), %d messages, %d dropped or failed",
		n.P50, n.P99, ratio(float64(n.P99), float64(s.P99)), n.N, dropped)
	rep.target("notify: event -> receiver p99 <= 1 s under "+fmt.Sprint(o.Harnesses)+" harnesses", n.P99 <= time.Second && dropped == 0,
		"p99 %s", n.P99)
	return nil
}
