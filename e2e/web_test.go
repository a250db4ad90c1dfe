//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/harness-dev/harness/internal/proctest"
	"github.com/harness-dev/harness/internal/testenv"
)

// chromiumPath is Debian's chromium, which scripts/test installs.
const chromiumPath = "/usr/bin/chromium"

// newBrowser starts a headless Chromium of its own (a temp profile) and
// returns a tab's context; extra are more flags. Cleanup ends the browser
// and checks that none of its processes is left.
func newBrowser(t *testing.T, width, height int, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	testenv.File(t, chromiumPath, "Debian's chromium")
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	}
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		if left := procsLeft(func(pid int) bool {
			return strings.Contains(strings.Join(proctest.Argv(pid), " "), profile)
		}); len(left) > 0 {
			t.Errorf("chromium processes left after the test: %v", left)
		}
	})
	return ctx
}

// typeKeys types into the focused element as a user does: text arrives
// as the browser's text input (Input.insertText), Enter as its key. (A
// synthesized keyDown plus char pair, chromedp.KeyEvent, makes xterm.js
// see every printable key twice, which a real keyboard never does.)
func typeKeys(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for len(s) > 0 {
			text, rest, enter := strings.Cut(s, "\r")
			if text != "" {
				if _, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
					return err
				}
			}
			if enter {
				for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
					k := input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
					if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, k); err != nil {
						return err
					}
				}
			}
			s = rest
		}
		return nil
	})
}

// clickLive clicks a button of the page's live part, which the page
// redraws at each event of what it shows (app.js refresh): the node
// chromedp found may be replaced before its click lands ("Could not find
// node with given id"). It finds the button again, as a person would the
// redrawn one, up to five times.
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var err error
		for range 5 {
			if _, err = chromedp.Click(chromedp.CSS(sel))(ctx, t); err == nil || !strings.Contains(err.Error(), "given id") {
				return err
			}
		}
		return err
	})
}

// browse runs chromedp steps with a deadline, failing the test with what.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// get runs one chromedp action with a deadline and returns its value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// eval evaluates a JS expression in the page, promises awaited.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return get(t, ctx, "evaluate "+js, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// webBase is the dashboard's URL: the MCP endpoint's origin.
func (f *fleet) webBase() string {
	f.T.Helper()
	return strings.TrimSuffix(f.mcpURL(), "/mcp")
}

// signIn signs in through the login form and waits for the fleet.
func signIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	browse(t, ctx, "sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#summary")),
	)
}

// signOut presses the page's sign-out button.
func signOut(t *testing.T, ctx context.Context) {
	t.Helper()
	browse(t, ctx, "sign out",
		chromedp.Click(chromedp.CSS(".signout button")),
		chromedp.WaitVisible(chromedp.CSS("#token")),
	)
}

// termRows are the rows of the page's terminal as text, trailing blanks
// trimmed, like `harness screen`.
func termRows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `(() => { const b = window.harnessAttach.term.buffer.active; const out = [];
		for (let i = 0; i < window.harnessAttach.term.rows; i++) { const l = b.getLine(b.viewportY + i); out.push(l ? l.translateToString(true) : ''); }
		return out; })()`)
}

// screenLines is `harness screen NAME --json`'s lines.
func (f *fleet) screenLines(name string) []string {
	f.T.Helper()
	var s struct {
		Lines []string `json:"lines"`
	}
	f.MustJSON(&s, "screen", name)
	return s.Lines
}

// postStatus POSTs from the page (the session's cookie, same origin) and
// returns the status; csrf adds the page's CSRF header.
func postStatus(t *testing.T, ctx context.Context, path, body string, csrf bool) int {
	t.Helper()
	hdr := `{'Content-Type': 'application/x-www-form-urlencoded'}`
	if csrf {
		hdr = `{'Content-Type': 'application/x-www-form-urlencoded', 'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content}`
	}
	return eval[int](t, ctx, fmt.Sprintf(`fetch(%q, {method: 'POST', credentials: 'same-origin', headers: %s, body: %q}).then(r => r.status)`, path, hdr, body))
}

// artifactDir is where the browser tests leave screenshots:
// $HARNESS_TEST_ARTIFACTS, else a directory under the system's temp dir.
func artifactDir(t *testing.T) string {
	dir := os.Getenv("HARNESS_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "harness-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// saveScreenshot writes png to the artifacts, and to docs/screenshots when
// HARNESS_UPDATE_SCREENSHOTS=1 (how the README's pictures are made).
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	path := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if os.Getenv("HARNESS_UPDATE_SCREENSHOTS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "docs", "screenshots", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const webConfig = `[daemon]
mcp_http = "127.0.0.1:0"
mcp_http_operator_allow = ["read", "write", "input"]

[harness.echo]
description = "reads lines and answers them"
cmd = "sh"
args = ["-c", "while read l; do echo \"got: $l\"; done"]
enabled = true

[harness.worker]
description = "a long-running worker"
cmd = "sleep"
args = ["3600"]
enabled = true

[harness.nightly]
description = "a job"
cmd = "sh"
args = ["-c", "echo nightly"]
schedule = "0 3 * * *"
`

// TestScenario_DashboardInABrowser drives the web dashboard with a real
// headless Chromium against a real daemon: sign in, the fleet lists the
// harnesses, a CLI stop shows within a second, the terminal shows what
// `harness screen` shows and takes keys, a POST without the CSRF token is
// refused, a read-only dashboard token sees the terminal but its keys,
// actions and answers are refused server-side, and the phone-sized fleet
// fits its width.
func TestScenario_DashboardInABrowser(t *testing.T) {
	f := newFleet(t, webConfig+childHarness("tui", "tui", "enabled = true"))
	f.waitState("echo", "running")
	f.waitState("worker", "running")
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)

	// Sign in; the fleet lists every unit.
	signIn(t, ctx, base, opTok)
	names := eval[[]string](t, ctx, `[...document.querySelectorAll('tr.unit')].map(r => r.dataset.name)`)
	if strings.Join(names, ",") != "echo,nightly,tui,worker" {
		t.Fatalf("fleet rows = %v, want echo,nightly,tui,worker", names)
	}
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	cookies := res.Cookies
	if len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict || strings.Contains(cookies[0].Value, opTok) {
		t.Fatalf("session cookie = %+v, want one HttpOnly SameSite=Strict cookie that is not the token", cookies)
	}

	// A stop from the CLI shows on the page within a second (server-sent
	// events, no polling).
	browse(t, ctx, "wait for the live stream", chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)))
	start := time.Now()
	f.MustRun("stop", "worker")
	cli := time.Since(start)
	c1, cancel := context.WithTimeout(ctx, time.Second)
	err = chromedp.Do(c1, chromedp.WaitVisible(chromedp.CSS(`tr[data-name="worker"][data-state="stopped"]`)))
	cancel()
	if err != nil {
		t.Fatalf("the page did not show worker stopped within 1s of `harness stop` returning (%v): %v", cli, err)
	}
	t.Logf("CLI stop took %v; the page showed it %v after the CLI began", cli, time.Since(start))

	// The row's start button (a button of the page's one action form)
	// starts it again, and the row shows it running.
	browse(t, ctx, "press the worker row's start",
		clickLive(`tr[data-name="worker"] button[data-act="start"]`),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-name="worker"][data-state="running"]`)))
	f.waitState("worker", "running")
	f.MustRun("stop", "worker")
	f.waitState("worker", "stopped")

	// A POST without the CSRF token is refused, and changes nothing.
	if st := postStatus(t, ctx, "/h/echo/stop", "", false); st != 403 {
		t.Fatalf("POST /h/echo/stop without CSRF = %d, want 403", st)
	}
	if u := f.unit("echo"); u.State != "running" {
		t.Fatalf("echo is %s after a refused stop", u.State)
	}
	if st := postStatus(t, ctx, "/h/worker/start", "", true); st != 200 {
		t.Fatalf("POST /h/worker/start with CSRF = %d, want 200", st)
	}
	f.waitState("worker", "running")

	// The harness page's terminal shows the rows `harness screen` shows.
	f.MustRun("wait", "tui", "--idle", "300ms", "--timeout", "20s")
	browse(t, ctx, "open the tui harness",
		chromedp.Navigate(base+"/h/tui"),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
	)
	f.WaitFor("the page's terminal to show the screen's rows", 5*time.Second, func() bool {
		return sameRows(termRows(t, ctx), f.screenLines("tui"))
	})

	// Keys typed in the page reach the program.
	browse(t, ctx, "open echo and type",
		chromedp.Navigate(base+"/h/echo"),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
		chromedp.Click(chromedp.CSS("#term")),
	)
	browse(t, ctx, "type", typeKeys("hello from chromium\r"))
	f.WaitFor("echo to answer the typed line", 5*time.Second, func() bool {
		return slicesContain(f.screenLines("echo"), "got: hello from chromium")
	})
	f.WaitFor("the page to show the answer", 5*time.Second, func() bool {
		return slicesContain(termRows(t, ctx), "got: hello from chromium")
	})
	saveScreenshotOf(t, ctx, "dashboard-harness.png")

	// A read-only dashboard token: it sees the fleet and the terminal;
	// its keys, actions and answers are refused by the server.
	signOut(t, ctx)
	roTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token", "--dashboard", "--grant", "read"))
	if !strings.HasPrefix(roTok, "hdt_") {
		t.Fatalf("dashboard token = %q", roTok)
	}
	signIn(t, ctx, base, roTok)
	buttons := eval[int](t, ctx, `document.querySelectorAll('button.act').length`)
	if buttons != 0 {
		t.Fatalf("a read-only session's fleet shows %d action buttons", buttons)
	}
	browse(t, ctx, "open echo read-only",
		chromedp.Navigate(base+"/h/echo"),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
		chromedp.Click(chromedp.CSS("#term")),
		typeKeys("sneaky\r"),
	)
	notice := get(t, ctx, "the refusal notice", chromedp.Poll[string](
		`(window.harnessAttach.notices.find(n => n.kind === 'notice') || {}).message`, chromedp.WithPollingTimeout(5*time.Second)))
	if !strings.Contains(notice, "read-only") {
		t.Fatalf("notice = %q, want the read-only refusal", notice)
	}
	if !slicesContain(termRows(t, ctx), "got: hello from chromium") {
		t.Fatalf("the read-only terminal does not show the screen: %q", termRows(t, ctx))
	}
	for _, p := range []string{"/h/echo/send", "/h/echo/answer", "/h/echo/stop"} {
		if st := postStatus(t, ctx, p, "text=sneaky&enter=1&choice=1", true); st != 403 {
			t.Errorf("read-only POST %s = %d, want 403", p, st)
		}
	}
	if rows := f.screenLines("echo"); slicesContainSub(rows, "sneaky") {
		t.Fatalf("a read-only token's keys reached the program: %q", rows)
	}
	if u := f.unit("echo"); u.State != "running" {
		t.Fatalf("echo is %s after a read-only stop", u.State)
	}

	// Revoking the token ends its session: the open page's event stream
	// is cut with `signedout` and the page goes to sign-in by itself (a
	// Navigate of the test's own, racing that, was aborted in a CI run),
	// and the next request is signed out too.
	id := regexp.MustCompile(`(?m)^([0-9a-f]{12}) `).FindStringSubmatch(f.MustRun("--state-dir", f.State, "mcp", "token", "--list"))
	if id == nil {
		t.Fatal("mcp token --list shows no dashboard token")
	}
	f.MustRun("--state-dir", f.State, "mcp", "token", "--revoke", id[1])
	browse(t, ctx, "the open page of a revoked token goes to sign-in",
		chromedp.WaitVisible(chromedp.CSS("#token")),
	)
	browse(t, ctx, "a revoked token is signed out",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
	)

	// A phone: the fleet fits 390 px, nothing scrolls sideways.
	signIn(t, ctx, base, opTok)
	type widthsJS struct {
		Doc   float64 `json:"doc"`
		Table float64 `json:"table"`
		View  float64 `json:"view"`
	}
	browse(t, ctx, "phone-sized fleet",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#summary")),
	)
	widths := eval[widthsJS](t, ctx, `({doc: document.documentElement.scrollWidth, table: Math.max(...[...document.querySelectorAll('table.fleet')].map(t => t.getBoundingClientRect().right)), view: window.innerWidth})`)
	png := get(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	saveScreenshot(t, "dashboard-fleet-390x844.png", png)
	if widths.View != 390 || widths.Doc > widths.View || widths.Table > widths.View {
		t.Fatalf("at 390x844: document %v px, fleet table right edge %v px, viewport %v px: it scrolls sideways", widths.Doc, widths.Table, widths.View)
	}
	browse(t, ctx, "desktop fleet", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#summary")))
	saveScreenshotOf(t, ctx, "dashboard-fleet.png")
}

func saveScreenshotOf(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := get(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	saveScreenshot(t, name, png)
}

// sameRows compares the page's rows with the screen's: the screen's lines
// are the page's first rows, and the rest of the page is blank.
func sameRows(page, screen []string) bool {
	if len(screen) == 0 || len(page) < len(screen) {
		return false
	}
	for i, l := range page {
		want := ""
		if i < len(screen) {
			want = screen[i]
		}
		if l != want {
			return false
		}
	}
	return true
}

func slicesContain(rows []string, s string) bool {
	for _, r := range rows {
		if r == s {
			return true
		}
	}
	return false
}

func slicesContainSub(rows []string, s string) bool {
	for _, r := range rows {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}
