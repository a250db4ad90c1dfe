//go:build e2e

package e2e

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
	f := newFleet(t, operatorWeb+"[harness.echo]\ncmd = \"sh\"\nargs = [\"-c\", \"while read l; do echo \\\"got: $l\\\"; done\"]\nenabled = true\n")
	f.waitState("echo", "running")
	ctx := livePage(t, f, "echo")
	browse(t, ctx, "see echo's actions", chromedp.WaitVisible(chromedp.CSS(`.facts .actions button.act`)))
	return f, ctx
}

// operatorWeb is the daemon section of a fleet whose dashboard the
// operator's token may use to read, act and type.
const operatorWeb = "[daemon]\nmcp_http = \"127.0.0.1:0\"\nmcp_http_operator_allow = [\"read\", \"write\", \"input\"]\n\n"

// livePage is a browser signed in as the operator on the page of harness
// name, live, and its first redraw (the event stream's open asks for one)
// done, so the steps after it meet the part they found.
func livePage(t *testing.T, f *fleet, name string) context.Context {
	t.Helper()
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)
	browse(t, ctx, "open "+name,
		chromedp.Navigate(base+"/h/"+name),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-refreshed]`)),
	)
	return ctx
}

// TestScenario_ARedrawThatBringsNothingNewKeepsThePage: the harness page
// fetches its live part at every event of the fleet; when the part is
// the one already shown (here a harness never started, while another one
// starts and stops), the page keeps its nodes, so what is under the
// person's pointer stays. Its own event still redraws it.
func TestScenario_ARedrawThatBringsNothingNewKeepsThePage(t *testing.T) {
	f := newFleet(t, operatorWeb+
		"[harness.quiet]\ncmd = \"sleep\"\nargs = [\"600\"]\n\n"+
		"[harness.other]\ncmd = \"sleep\"\nargs = [\"600\"]\n")
	ctx := livePage(t, f, "quiet")
	mark := `(() => { document.querySelectorAll('#live *').forEach(n => { n.__seen = true; }); return true; })()`
	kept := `[...document.querySelectorAll('#live *')].every(n => n.__seen === true)`
	redrawn := func(what string, do func()) {
		t.Helper()
		before := eval[string](t, ctx, `document.body.getAttribute('data-refreshed') || ''`)
		do()
		f.WaitFor(what, 10*time.Second, func() bool {
			return eval[string](t, ctx, `document.body.getAttribute('data-refreshed') || ''`) != before
		})
	}
	eval[bool](t, ctx, mark)
	redrawn("the page to read its live part after other starts", func() { f.MustRun("start", "other") })
	f.waitState("other", "running")
	redrawn("the page to read its live part after other stops", func() { f.MustRun("stop", "other") })
	if !eval[bool](t, ctx, kept) {
		t.Fatal("quiet's page replaced its live part for events of another harness that changed nothing on it")
	}
	redrawn("the page to redraw after quiet starts", func() { f.MustRun("start", "quiet") })
	f.WaitFor("quiet's page to show it running", 10*time.Second, func() bool {
		return !eval[bool](t, ctx, kept)
	})
}
