package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// Path (w) of part 6: keystroke to echo through the web
// dashboard's terminal, measured in the browser. A headless Chromium
// (Debian's chromium) signs in with the operator token and opens the page
// of harness webecho (the same child as echo); a script in the page then types each key into the
// page's xterm.js (Terminal.input, which goes out through the same onData
// handler as a keyboard) and takes performance.now() when the echo arrives
// on the page's WebSocket. Browser -> WebSocket -> daemon -> PTY -> child
// -> PTY reader -> fan-out -> WebSocket -> browser.

const chromium = "/usr/bin/chromium"

// webKeys types warmup+keys keys in a fresh browser and returns the timed
// ones' round trips (w), then, in the same browser, as many round trips
// of one byte to the floor server's WebSocket echo (f).
func webKeys(ctx context.Context, d *benchDaemon, floor string, warmup, keys int) (w, f []time.Duration, split map[string][]time.Duration, err error) {
	split = map[string][]time.Duration{}
	if d.info.MCPURL == "" {
		return nil, nil, nil, errors.New("daemon has no mcp_url (mcp_http unset?)")
	}
	if _, err := os.Stat(chromium); err != nil {
		return nil, nil, nil, fmt.Errorf("path w needs %s (scripts/test installs Debian's chromium): %w", chromium, err)
	}
	tok, err := d.cli(ctx, "mcp", "token")
	if err != nil {
		return nil, nil, nil, err
	}
	base := strings.TrimSuffix(d.info.MCPURL, "/mcp")
	profile, err := os.MkdirTemp("", "bench-chromium-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(profile)
	bctx, cancelBrowser, err := newChromium(ctx, profile)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cancelBrowser()
	tctx, cancel := context.WithTimeout(bctx, 60*time.Second+time.Duration(warmup+keys)*100*time.Millisecond)
	defer cancel()
	if err := chromedp.Do(tctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(tok))),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#summary")),
		chromedp.Navigate(base+"/h/webecho"),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
	); err != nil {
		return nil, nil, nil, fmt.Errorf("open the echo harness's page: %w", err)
	}
	res, err := chromedp.Run(tctx, chromedp.Evaluate[webTrips](fmt.Sprintf(webKeysJS, warmup, keys), chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("type in the page: %w", err)
	}
	ms := res.Trips
	for k, v := range map[string][]float64{"input": res.Split.Input, "wire": res.Split.Wire, "deliver": res.Split.Deliver} {
		split[k] = millis(v)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(floor)); err != nil {
		return nil, nil, nil, fmt.Errorf("open the floor page: %w", err)
	}
	fms, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](fmt.Sprintf(floorJS, warmup, keys), chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("floor round trips: %w", err)
	}
	return millis(ms), millis(fms), split, nil
}

// webTrips is what webKeysJS answers: each key's round trip and its
// split, in milliseconds.
type webTrips struct {
	Trips []float64 `json:"trips"`
	Split struct {
		Input   []float64 `json:"input"`
		Wire    []float64 `json:"wire"`
		Deliver []float64 `json:"deliver"`
	} `json:"split"`
}

func millis(ms []float64) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m * float64(time.Millisecond))
	}
	return out
}

// floorServer is path (f)'s other end: a page and a WebSocket that sends
// every message straight back (coder/websocket, as the daemon uses), so
// (f) is what the browser's own WebSocket path costs with no daemon, PTY
// or program behind it. It returns the page's URL and a stop function.
func floorServer() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>floor</title><p>WebSocket echo")
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, b); err != nil {
				return
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}

// floorJS sends one byte at a time on a WebSocket to the floor server
// and times each echo, like webKeysJS.
const floorJS = `(async (warmup, keys) => {
  const ws = new WebSocket('ws://' + location.host + '/ws');
  ws.binaryType = 'arraybuffer';
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error('floor websocket failed')); });
  let waiting = null;
  ws.onmessage = () => { if (waiting) { const w = waiting; waiting = null; w(performance.now()); } };
  const out = [];
  for (let k = 0; k < warmup + keys; k++) {
    const echoed = new Promise((done, fail) => {
      waiting = done;
      setTimeout(() => fail(new Error('no echo of byte ' + k)), 5000);
    });
    const t0 = performance.now();
    ws.send(new Uint8Array([97 + k %% 26]));
    const t1 = await echoed;
    if (k >= warmup) out.push(t1 - t0);
  }
  ws.close();
  return out;
})(%d, %d)`

// webKeysJS types keys one at a time into the page's terminal and times
// each echo's arrival on the WebSocket (window.harnessAttach, app.js). It
// also splits each trip with marks in the page: xterm.js's input path
// (Terminal.input to the WebSocket's send), the wire (send to the start of
// the page's onmessage: the browser's network path, the daemon, the PTY
// and the program), and the delivery (onmessage to the listener, after
// term.write: xterm.js parses an echo that follows user input at once).
// Chromium rounds performance.now() to 100 µs here (no cross-origin
// isolation), so the parts are read as medians of many keys.
const webKeysJS = `(async (warmup, keys) => {
  const a = window.harnessAttach;
  const dec = new TextDecoder();
  let waiting = null, cur = null, sock = null;
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (d) {
    if (cur && !cur.sent) cur.sent = performance.now();
    if (!sock && this.url.indexOf('/attach') >= 0) {
      sock = this;
      const onmsg = sock.onmessage;
      sock.onmessage = function (m) {
        if (cur && !cur.arrived && typeof m.data !== 'string') cur.arrived = performance.now();
        return onmsg.call(this, m);
      };
    }
    return send.call(this, d);
  };
  a.listeners.push(bytes => {
    if (waiting && dec.decode(bytes).includes(waiting.key)) { const w = waiting; waiting = null; w.done(performance.now()); }
  });
  const out = [], split = { input: [], wire: [], deliver: [] };
  for (let k = 0; k < warmup + keys; k++) {
    const key = String.fromCharCode(97 + k %% 26);
    const echoed = new Promise((done, fail) => {
      waiting = { key, done };
      setTimeout(() => fail(new Error('no echo of key ' + k)), 5000);
    });
    cur = {};
    const t0 = performance.now();
    a.term.input(key, true);
    const t1 = await echoed;
    if (k >= warmup) {
      out.push(t1 - t0);
      if (cur.sent && cur.arrived) {
        split.input.push(cur.sent - t0); split.wire.push(cur.arrived - cur.sent);
        split.deliver.push(t1 - cur.arrived);
      }
    }
  }
  WebSocket.prototype.send = send;
  return { trips: out, split };
})(%d, %d)`

// newChromium starts a headless Chromium on profile and returns a tab's
// context; cancel ends the browser.
func newChromium(ctx context.Context, profile string) (context.Context, func(), error) {
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	bctx, cancelTab := chromedp.NewContext(alloc)
	cancel := func() { cancelTab(); cancelAlloc() }
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start chromium: %w", err)
	}
	return bctx, cancel, nil
}
