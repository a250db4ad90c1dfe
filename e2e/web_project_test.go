//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScenario_AProjectHarnessOpensFromTheFleet: a project's harness
// ("shop/echo") is linked from the fleet page to a page of its own in a
// real Chromium; its terminal attaches, keys typed there reach the
// program, and its stop button stops it.
func TestScenario_AProjectHarnessOpensFromTheFleet(t *testing.T) {
	f := newFleet(t, operatorWeb)
	dir := t.TempDir()
	project := "[project]\nname = \"shop\"\n\n[harness.echo]\ncmd = \"sh\"\nargs = [\"-c\", \"while read l; do echo \\\"got: $l\\\"; done\"]\nenabled = true\n"
	if err := os.WriteFile(filepath.Join(dir, "harness.toml"), []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := f.runIn(dir, "up"); code != 0 {
		t.Fatalf("up: exit %d: %s%s", code, out, errOut)
	}
	f.WaitFor("shop/echo to run", 20*time.Second, func() bool { return f.unit("shop/echo").State == "running" })
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)
	link := `tr.unit[data-name="shop/echo"] td.name a`
	browse(t, ctx, "open shop/echo from the fleet",
		chromedp.WaitVisible(chromedp.CSS(link)),
		clickLive(link),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
	)
	if h := eval[string](t, ctx, `document.getElementById('hname').textContent`); h != "shop/echo" {
		t.Fatalf("the page is of %q, want shop/echo", h)
	}
	browse(t, ctx, "type", chromedp.Click(chromedp.CSS("#term")), typeKeys("hello shop\r"))
	f.WaitFor("the project's echo to answer the typed line", 10*time.Second, func() bool {
		return slicesContain(f.screenLines("shop/echo"), "got: hello shop")
	})
	browse(t, ctx, "stop it from its page", clickLive(`.facts .actions button.act`))
	f.WaitFor("shop/echo to stop", 20*time.Second, func() bool { return f.unit("shop/echo").State == "stopped" })
}
