package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// TestScenario_AButtonPressedWhileThePageRedrawsStillClicks: the harness
// page redraws its live part at each event of its harness. A redraw that
// falls between a press on the stop button and its release would replace
// the button, and the browser would fire no click: the person's stop
// would be lost. The page holds the redraw until the release, the stop
// goes through, and the held redraw is put in after.
func TestScenario_AButtonPressedWhileThePageRedrawsStillClicks(t *testing.T) {
	f, ctx := echoPage(t)
	stop := `.facts .actions button.act`
	if label := eval[string](t, ctx, `document.querySelector('`+stop+`').textContent`); label != "stop" {
		t.Fatalf("the first action is %q, want stop", label)
	}
	at := eval[[]float64](t, ctx, `(function () { var r = document.querySelector('`+stop+`').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	mouse := func(typ input.DispatchMouseEventType) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, input.DispatchMouseEvent, input.DispatchMouseEventParams{
				Type: typ, X: at[0], Y: at[1], Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1})
			return err
		})
	}
	browse(t, ctx, "press stop", mouse(input.DispatchMouseEventTypeMousePressed))
	// Output turns echo busy: an event, so the page fetches its live part.
	f.MustRun("send", "echo", "hello")
	browse(t, ctx, "the redraw waits for the release", chromedp.WaitVisible(chromedp.CSS(`body[data-refresh-held="1"]`)))
	browse(t, ctx, "release", mouse(input.DispatchMouseEventTypeMouseReleased))
	f.WaitFor("the pressed stop to stop echo", 20*time.Second, func() bool { return f.unit("echo").State == "stopped" })
	browse(t, ctx, "the held redraw put in, then the stopped state",
		chromedp.WaitNotPresent(chromedp.CSS(`body[data-refresh-held]`)),
		chromedp.WaitVisible(chromedp.CSS(`#state.st-stopped`)),
	)
}

// TestScenario_OpenedSectionsStayOpenAcrossRedraws: the harness page's
// Runs and Recent calls sections keep what the person chose (Runs
// closed, calls opened) when an event redraws the live part.
func TestScenario_OpenedSectionsStayOpenAcrossRedraws(t *testing.T) {
	f, ctx := echoPage(t)
	browse(t, ctx, "close Runs, open Recent calls",
		clickLive(`details.runs > summary`),
		clickLive(`details.calls > summary`),
	)
	before := eval[string](t, ctx, `document.body.getAttribute('data-refreshed') || ''`)
	f.MustRun("send", "echo", "hello")
	f.WaitFor("the page to redraw its live part", 10*time.Second, func() bool {
		return eval[string](t, ctx, `document.body.getAttribute('data-refreshed') || ''`) != before
	})
	if got := eval[[]bool](t, ctx, `[document.querySelector('details.runs').open, document.querySelector('details.calls').open]`); got[0] || !got[1] {
		t.Fatalf("after a redraw Runs open=%v, Recent calls open=%v: want closed and open, as chosen", got[0], got[1])
	}
}

// echoPage is a fleet with a running echo harness and a browser signed in
// as the operator on its page, live.
func echoPage(t *testing.T) (*fleet, context.Context) {
	t.Helper()
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\nmcp_http_operator_allow = [\"read\", \"write\", \"input\"]\n\n"+
		"[harness.echo]\ncmd = \"sh\"\nargs = [\"-c\", \"while read l; do echo \\\"got: $l\\\"; done\"]\nenabled = true\n")
	f.waitState("echo", "running")
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)
	// Live, and its first redraw (the event stream's open asks for one)
	// done, so the steps below meet the part they found.
	browse(t, ctx, "open echo",
		chromedp.Navigate(base+"/h/echo"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-refreshed]`)),
		chromedp.WaitVisible(chromedp.CSS(`.facts .actions button.act`)),
	)
	return f, ctx
}
