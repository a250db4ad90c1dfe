//go:build e2e

package e2e

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// signInHere signs in on the sign-in page the browser is showing and
// waits for the page sel marks.
func signInHere(t *testing.T, ctx context.Context, token, sel string) {
	t.Helper()
	browse(t, ctx, "sign in",
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	)
}

// TestScenario_SignInGoesWhereYouWereGoing, a new user's first visit in a
// real Chromium: daemon-info names the dashboard; a harness's page opened
// signed out asks for a token and says how to make one that can act and
// answer (the operator token, read-only by default, comes second); the
// command it shows makes such a token, and signing in with it lands on
// the harness's page, not the fleet. When the session ends on that page,
// the next sign-in returns to it. A destination on another site is
// never followed.
func TestScenario_SignInGoesWhereYouWereGoing(t *testing.T) {
	f := newFleet(t, "[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n"+
		"[harness.echo]\ncmd = \"sleep\"\nargs = [\"3600\"]\nenabled = true\n\n"+
		"[harness.other]\ncmd = \"sleep\"\nargs = [\"3600\"]\n")
	f.waitState("echo", "running")
	var info struct {
		DashboardURL string `json:"dashboard_url"`
	}
	f.MustJSON(&info, "daemon-info")
	base := strings.TrimSuffix(info.DashboardURL, "/")
	if base == "" {
		t.Fatal("daemon-info names no dashboard")
	}
	ctx := newBrowser(t, 1280, 900)
	href := func() string { return eval[string](t, ctx, `location.href`) }

	browse(t, ctx, "open a harness's page signed out",
		chromedp.Navigate(base+"/h/echo"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
	)
	if got, want := href(), base+"/login?next=%2Fh%2Fecho"; got != want {
		t.Fatalf("signed out, /h/echo went to %s, want %s", got, want)
	}
	text := eval[string](t, ctx, `document.getElementById('login').innerText`)
	mint := strings.Index(text, "harness mcp token --dashboard --grant read,write,input")
	op := strings.Index(text, "operator token")
	if mint < 0 || op < mint || !strings.Contains(text, "answer prompts") || !strings.Contains(text[op:], "read-only") {
		t.Fatalf("the sign-in page does not lead with how to make a token that can answer:\n%s", text)
	}
	shown := strings.Fields(eval[string](t, ctx, `document.querySelector('#login pre code').textContent`))
	if len(shown) < 2 || shown[0] != "harness" {
		t.Fatalf("the page's command = %q", shown)
	}
	tok := strings.TrimSpace(f.MustRun(append([]string{"--state-dir", f.State}, shown[1:]...)...))
	signInHere(t, ctx, tok, "#hname")
	if got := href(); got != base+"/h/echo" {
		t.Fatalf("after signing in the browser is at %s, want %s", got, base+"/h/echo")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('.facts .actions button.act').length`); n == 0 {
		t.Fatal("the token the page says to make cannot act on the harness")
	}

	// The session ends (its token revoked) while the page is open: the
	// page's next redraw goes to the sign-in page, which returns here.
	browse(t, ctx, "the page goes live",
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-refreshed]`)),
	)
	id := regexp.MustCompile(`(?m)^([0-9a-f]{12}) `).FindStringSubmatch(f.MustRun("--state-dir", f.State, "mcp", "token", "--list"))
	if id == nil {
		t.Fatal("mcp token --list shows no dashboard token")
	}
	f.MustRun("--state-dir", f.State, "mcp", "token", "--revoke", id[1])
	f.MustRun("start", "other") // an event: the page redraws
	browse(t, ctx, "the page sends a revoked session to sign in", chromedp.WaitVisible(chromedp.CSS("#token")))
	if got, want := href(), base+"/login?next=%2Fh%2Fecho"; got != want {
		t.Fatalf("a page whose session ended went to %s, want %s", got, want)
	}
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	signInHere(t, ctx, opTok, "#hname")
	if got := href(); got != base+"/h/echo" {
		t.Fatalf("signing in again landed on %s, want %s", got, base+"/h/echo")
	}

	// Another site as the destination: the sign-in goes to the fleet.
	for _, next := range []string{"//example.com/h/echo", "https://example.com/", `/\example.com`} {
		browse(t, ctx, "open the sign-in page with next="+next,
			chromedp.Navigate(base+"/login?next="+url.QueryEscape(next)))
		if n := eval[int](t, ctx, `document.querySelectorAll('input[name="next"]').length`); n != 0 {
			t.Fatalf("the sign-in page kept next=%s", next)
		}
		signInHere(t, ctx, opTok, "#summary")
		if got := href(); got != base+"/" {
			t.Fatalf("signing in with next=%s landed on %s, want the fleet", next, got)
		}
	}
	f.MustRun("stop", "other")
}
