package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// fleetPage is part 2's fleet page: the operator signs in to the
// dashboard (served beside /mcp), then GET / is timed runs times as a
// browser asks for it (Accept-Encoding: gzip, the bytes as they cross the
// wire) and as a client that takes no encoding; interleaved.
func fleetPage(ctx context.Context, d *benchDaemon, harnesses, runs int, rep *report, part string) error {
	if d.info.MCPURL == "" {
		return fmt.Errorf("daemon has no mcp_url (mcp_http unset?)")
	}
	tok, err := d.cli(ctx, "mcp", "token")
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(d.info.MCPURL, "/mcp")
	c, closeIdle, err := signedIn(base, strings.TrimSpace(string(tok)))
	if err != nil {
		return err
	}
	defer closeIdle()
	get := func(enc string) (time.Duration, int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Accept", "text/html")
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET /: %s", resp.Status)
		}
		return time.Since(t0), int(n), err
	}
	var gz, plain []time.Duration
	gzBytes, plainBytes := 0, 0
	for range runs {
		lat, n, err := get("gzip")
		if err != nil {
			return err
		}
		gz, gzBytes = append(gz, lat), n
		if lat, n, err = get(""); err != nil {
			return err
		}
		plain, plainBytes = append(plain, lat), n
	}
	g, p := summarize(gz), summarize(plain)
	rep.metric(part, "fleet page GET / as a browser asks (gzip): median / max, bytes on the wire", "%s / %s, %d KB (n=%d)", us(g.P50), us(g.Max), gzBytes/1000, g.N)
	rep.metric(part, "fleet page GET / without compression: median / max, bytes", "%s / %s, %d KB (n=%d)", us(p.P50), us(p.Max), plainBytes/1000, p.N)
	if paints, err := firstPaint(ctx, base, strings.TrimSpace(string(tok)), 5); err != nil {
		rep.metric(part, "fleet page first paint in Chromium", "not measured: %v", err)
	} else {
		fp := summarize(paints)
		rep.metric(part, "fleet page first contentful paint in headless Chromium, median / max", "%s / %s (n=%d)", us(fp.P50), us(fp.Max), fp.N)
		rep.target(fmt.Sprintf("fleet page at %d harnesses: first paint in Chromium <= 1 s", harnesses), fp.P50 <= time.Second, "%s (max %s)", us(fp.P50), us(fp.Max))
	}
	if err := fanOut(ctx, d, base, strings.TrimSpace(string(tok)), 50, 10, rep, part); err != nil {
		return fmt.Errorf("event fan-out: %w", err)
	}
	rep.target(fmt.Sprintf("fleet page at %d harnesses: median <= 150 ms (gzip)", harnesses), g.P50 <= 150*time.Millisecond, "%s", us(g.P50))
	rep.target("fleet page: <= 600 KB on the wire (gzip)", gzBytes <= 600_000, "%d KB (%d KB uncompressed)", gzBytes/1000, plainBytes/1000)
	return nil
}

// signedIn is a dashboard client of its own (a cookie jar, a transport
// that leaves encodings to the caller) signed in with tok.
func signedIn(base, tok string) (*http.Client, func(), error) {
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{DisableCompression: true} // the bench asks, and counts wire bytes
	c := &http.Client{Jar: jar, Transport: tr}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {tok}})
	if err != nil {
		return nil, nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("sign-in to the dashboard: %s", resp.Status)
	}
	return c, tr.CloseIdleConnections, nil
}

// firstPaint signs in to the dashboard in headless Chromium and opens the
// fleet page runs times: the first contentful paint of each load, from
// the navigation's start, as the page's own performance entries say.
func firstPaint(ctx context.Context, base, tok string, runs int) ([]time.Duration, error) {
	if _, err := os.Stat(chromium); err != nil {
		return nil, fmt.Errorf("the first paint needs %s: %w", chromium, err)
	}
	profile, err := os.MkdirTemp("", "bench-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	bctx, cancel, err := newChromium(ctx, profile)
	if err != nil {
		return nil, err
	}
	defer cancel()
	tctx, cancelT := context.WithTimeout(bctx, 2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(tctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), tok),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#summary")),
	); err != nil {
		return nil, fmt.Errorf("sign in: %w", err)
	}
	var out []time.Duration
	for range runs {
		if err := chromedp.Do(tctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#summary"))); err != nil {
			return nil, fmt.Errorf("open the fleet page: %w", err)
		}
		ms, err := chromedp.Run(tctx, chromedp.Evaluate[float64](`new Promise(done => {
  const look = () => { const e = performance.getEntriesByName('first-contentful-paint')[0]; e ? done(e.startTime) : setTimeout(look, 20); };
  look();
})`, chromedp.EvalAwaitPromise))
		if err != nil {
			return nil, fmt.Errorf("first paint: %w", err)
		}
		out = append(out, time.Duration(ms*float64(time.Millisecond)))
	}
	return out, nil
}
