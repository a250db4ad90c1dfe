//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestScenario_TheDashboardInstallsAsAnAppAndCountsWaitingAgents: on a
// phone-sized Chromium, the signed-in dashboard has no installability
// error (manifest, icons, standalone display, service worker); while the
// demo agent waits the title reads "(1) Fleet · harness", and once it is
// answered from the CLI the count leaves the title, live. The waiting
// fleet and the action link's page are photographed at 390x844.
func TestScenario_TheDashboardInstallsAsAnAppAndCountsWaitingAgents(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newHookReceiver(t)
	f := newFleet(t, strings.Replace(demoLinksConfig(work, r.URL), "[daemon]\n", "[daemon]\nmcp_http_operator_allow = [\"read\", \"input\"]\n", 1))
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 390, 844)
	signIn(t, ctx, base, opTok)

	var errs []*page.InstallabilityError
	f.WaitFor("the page to be installable", 30*time.Second, func() bool {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := chromedp.Call(c, page.GetInstallabilityErrors, cdp.Empty{})
		if err != nil {
			t.Fatalf("Page.getInstallabilityErrors: %v", err)
		}
		errs = res.InstallabilityErrors
		return len(errs) == 0
	})
	if n := eval[bool](t, ctx, `navigator.serviceWorker.ready.then(r => !!r.active)`); !n {
		t.Fatal("the service worker is not active")
	}

	f.waitAgent("demo", "waiting")
	waitTitle := func(want string) {
		t.Helper()
		var title string
		f.WaitFor("the title "+want, 30*time.Second, func() bool {
			title = eval[string](t, ctx, `document.title`)
			return title == want
		})
	}
	waitTitle("(1) Fleet · harness")
	browse(t, ctx, "the fleet shows the waiting agent", chromedp.WaitVisible(chromedp.CSS(`tr.is-waiting[data-name="demo"]`)))
	saveScreenshotOf(t, ctx, "phone-fleet-waiting.png")

	m := decodeLinks(t, r.waitOn(t, "/json", "Allow edit to README.md?", 1)[0].Body)
	browse(t, ctx, "open the action link", chromedp.Navigate(m.link(t, "Yes")), chromedp.WaitVisible(chromedp.CSS("#link-form")))
	if got := eval[string](t, ctx, `document.querySelector('#link-choice').textContent`); got != "Yes" {
		t.Fatalf("the link page's choice: %q", got)
	}
	saveScreenshotOf(t, ctx, "phone-action-link.png")

	browse(t, ctx, "back to the fleet", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)))
	waitTitle("(1) Fleet · harness")
	f.MustRun("answer", "demo", "No")
	waitTitle("Fleet · harness")
	if got := eval[string](t, ctx, `document.body.dataset.waiting`); got != "0" {
		t.Fatal(fmt.Sprintf("data-waiting after the answer: %q", got))
	}
}
