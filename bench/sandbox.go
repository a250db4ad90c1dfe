package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/egress"
)

// sandboxRounds is how many starts part 10 times per variant.
const sandboxRounds = 20

// runSandbox is part 10: start to first screen of a harness under fs =
// "workdir", network = "allow" next to the same harness unconfined, in
// the same daemon and run, starts interleaved; then the egress proxy's
// throughput and per-request latency next to a direct connection.
func runSandbox(ctx context.Context, o options, bin, tmp string, rep *report) error {
	part := "10 (sandbox)"
	// The program: node when it is installed (what the agent CLIs run
	// on), else sh; it prints one line and waits.
	prog, args := "sh", []string{"-c", "echo first-screen; exec sleep 600"}
	if p, err := exec.LookPath("node"); err == nil {
		prog, args = p, []string{"-e", "console.log('first-screen'); setInterval(() => {}, 1e6)"}
	}
	work := filepath.Join(tmp, "sandbox-work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	var b strings.Builder
	for _, h := range []struct{ name, sb string }{
		{"plain", ""},
		{"boxed", `sandbox = { fs = "workdir", network = "allow", allow = ["127.0.0.1:9"] }`},
	} {
		fmt.Fprintf(&b, "[harness.%s]\ncmd = %q\nargs = [%q, %q]\nworkdir = %q\nstop_grace = 1\n%s\n", h.name, prog, args[0], args[1], work, h.sb)
	}
	d, err := startDaemon(ctx, o, bin, tmp, "sandbox", b.String())
	if err != nil {
		return err
	}
	defer d.close()
	lat := map[string][]time.Duration{}
	o.progress("part 10: %d starts of %s per variant, sandboxed and not, interleaved", sandboxRounds, filepath.Base(prog))
	for range sandboxRounds {
		for _, name := range []string{"plain", "boxed"} {
			dt, err := firstScreen(ctx, d, name)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			lat[name] = append(lat[name], dt)
			if err := d.ctl.Call(ctx, api.OpStop, api.NamesArgs{Names: []string{name}}, nil); err != nil {
				return err
			}
		}
	}
	plain, boxed := summarize(lat["plain"]), summarize(lat["boxed"])
	rep.metric(part, "start to first screen, unsandboxed ("+filepath.Base(prog)+"), p50 / p99", "%s / %s (n=%d)", us(plain.P50), us(plain.P99), plain.N)
	rep.metric(part, "start to first screen, fs = workdir + network = allow, p50 / p99", "%s / %s (%sx the unsandboxed p50)",
		us(boxed.P50), us(boxed.P99), ratio(float64(boxed.P50), float64(plain.P50)))
	rep.target("sandbox: start to first screen within 1.2x unsandboxed (p50)", float64(boxed.P50) <= 1.2*float64(plain.P50),
		"%s vs %s", us(boxed.P50), us(plain.P50))
	return proxyBench(ctx, o, rep, part)
}

// firstScreen starts name and times it until its screen shows the line.
func firstScreen(ctx context.Context, d *benchDaemon, name string) (time.Duration, error) {
	t0 := time.Now()
	if err := d.ctl.Call(ctx, api.OpStart, api.NamesArgs{Names: []string{name}}, nil); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var s api.Screen
		if err := d.ctl.Call(ctx, api.OpScreen, api.ScreenArgs{Name: name}, &s); err == nil {
			if strings.Contains(strings.Join(s.Lines, "\n"), "first-screen") {
				return time.Since(t0), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("no first screen within 30 s")
}

// proxyBench times requests to a local server through the egress proxy
// (plain HTTP, one request per connection, as the proxy serves them) and
// directly, and 64 MiB downloads through it.
func proxyBench(ctx context.Context, o options, rep *report, part string) error {
	blob := strings.Repeat("x", 64<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/blob" {
			io.WriteString(w, blob)
			return
		}
		io.WriteString(w, "ok")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Close()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p := egress.New(egress.Config{Allow: []string{ln.Addr().String()}})
	go p.Serve(pl)
	defer p.Close()
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: pl.Addr().String()})}}
	direct := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	const n = 500
	o.progress("part 10: %d requests through the egress proxy and directly", n)
	timeReqs := func(c *http.Client) ([]time.Duration, error) {
		var out []time.Duration
		for range n {
			t0 := time.Now()
			resp, err := c.Get("http://" + ln.Addr().String() + "/")
			if err != nil {
				return nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out = append(out, time.Since(t0))
		}
		return out, nil
	}
	dl, err := timeReqs(direct)
	if err != nil {
		return err
	}
	pr, err := timeReqs(proxied)
	if err != nil {
		return err
	}
	ds, ps := summarize(dl), summarize(pr)
	rep.metric(part, "request latency through the proxy, p50 / p99 (new connection each)", "%s / %s (direct: %s / %s)", us(ps.P50), us(ps.P99), us(ds.P50), us(ds.P99))
	// Throughput: parallel downloads through it.
	tunnel := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: pl.Addr().String()}),
		DialContext: (&net.Dialer{}).DialContext}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	var firstErr error
	t0 := time.Now()
	for range 4 {
		wg.Go(func() {
			resp, err := tunnel.Get("http://" + ln.Addr().String() + "/blob")
			if err == nil {
				var k int64
				k, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				total += k
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	mbps := float64(total) / (1 << 20) / time.Since(t0).Seconds()
	rep.metric(part, "proxy throughput, 4 parallel 64 MiB downloads", "%.0f MiB/s", mbps)
	return nil
}
