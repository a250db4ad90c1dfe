package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// fanOut is part 2's event fan-out: pages open /events as the dashboard's
// script does and, on each event, fetch the fleet's live part again after
// its 30 ms debounce (app.js refresh). One harness is stopped and started
// `triggers` times with 1 page and with `pages` pages open; the daemon's
// CPU per trigger is read from /proc around each, so what one more page
// costs an event is (CPU at pages - CPU at 1) / (pages - 1).
func fanOut(ctx context.Context, d *benchDaemon, base, opTok string, pages, triggers int, rep *report, part string) error {
	// A sign-in holds at most 8 streams and a credential 32: each page
	// signs in, half with the operator token and half with a dashboard
	// token.
	dash, err := d.cli(ctx, "mcp", "token", "--dashboard", "--grant", "read")
	if err != nil {
		return err
	}
	var clients []*http.Client
	for i := range pages {
		tok := opTok
		if i%2 == 1 {
			tok = strings.TrimSpace(string(dash))
		}
		c, closeIdle, err := signedIn(base, tok)
		if err != nil {
			return err
		}
		defer closeIdle()
		clients = append(clients, c)
	}
	per := map[int]time.Duration{}
	lastFrame := map[int]time.Duration{}
	for _, n := range []int{1, pages} {
		cpu, lat, err := fanOutAt(ctx, d, clients[:n], base, triggers)
		if err != nil {
			return fmt.Errorf("%d pages: %w", n, err)
		}
		per[n], lastFrame[n] = cpu, lat
	}
	extra := (per[pages] - per[1]) / time.Duration(pages-1)
	rep.metric(part, fmt.Sprintf("event fan-out: daemon CPU per stop+start with 1 / %d pages open (each refetching the live part)", pages),
		"%s / %s (%.2fx; %s per extra page)", us(per[1]), us(per[pages]), float64(per[pages])/float64(max(per[1], 1)), us(extra))
	rep.metric(part, fmt.Sprintf("event fan-out: stop+start to its last event on the last page, p50, 1 / %d pages", pages), "%s / %s", us(lastFrame[1]), us(lastFrame[pages]))
	rep.target(fmt.Sprintf("event fan-out: an extra page costs an event < 1/10 of the first page's (%d pages)", pages), extra*10 < per[1],
		"%s per extra page, %s for one page", us(extra), us(per[1]))
	return nil
}

// fanOutAt opens a page per client and times triggers stop+start cycles of h000.
func fanOutAt(ctx context.Context, d *benchDaemon, clients []*http.Client, base string, triggers int) (cpuPer, lastP50 time.Duration, err error) {
	n := len(clients)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got atomic.Int64 // "running" frames of h000 seen, over all pages
	var wg sync.WaitGroup
	opened := make(chan error, n)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opened <- page(ctx, c, base, &got)
		}()
	}
	defer wg.Wait()
	for range n {
		if err := <-opened; err != nil {
			return 0, 0, err
		}
	}
	var cpu time.Duration
	var lats []time.Duration
	for range triggers {
		want := got.Load() + int64(n)
		before := sampleCPU(d.pid()).Daemon
		t0 := time.Now()
		for _, op := range []string{"stop", "start"} {
			if err := d.ctl.Call(ctx, op, api.NameArg{Name: "h000"}, nil); err != nil {
				return 0, 0, err
			}
		}
		for got.Load() < want {
			if time.Since(t0) > 30*time.Second {
				return 0, 0, fmt.Errorf("pages saw %d of %d running events", got.Load()-want+int64(n), n)
			}
			time.Sleep(time.Millisecond)
		}
		lats = append(lats, time.Since(t0))
		time.Sleep(100 * time.Millisecond) // the pages' refetches land
		cpu += sampleCPU(d.pid()).Daemon - before
	}
	return cpu / time.Duration(triggers), summarize(lats).P50, nil
}

// page is one dashboard page: its event stream (opened reports whether it
// opened), and a refetch of the live part 30 ms after an event, at most
// one pending. Each frame saying h000 runs adds to got.
func page(ctx context.Context, c *http.Client, base string, got *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET /events: %s", resp.Status)
	}
	go func() {
		defer resp.Body.Close()
		var pending atomic.Bool
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			if strings.Contains(line, `"unit":"h000"`) && strings.Contains(line, `"state":"running"`) {
				got.Add(1)
			}
			if pending.CompareAndSwap(false, true) {
				time.AfterFunc(30*time.Millisecond, func() {
					defer pending.Store(false)
					r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/?fragment=1", nil)
					if err != nil {
						return
					}
					r.Header.Set("Accept-Encoding", "gzip")
					if resp, err := c.Do(r); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
		}
	}()
	return nil
}
