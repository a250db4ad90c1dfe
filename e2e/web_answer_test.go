//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScenario_WaitingAgentIsAnsweredFromThePage: a real Claude Code
// (from npm, against the scripted model server) asks to run a command;
// the fleet page in a real Chromium shows it waiting with the command,
// live; its harness page shows the prompt with one button per choice; clicking "Yes" approves it (the answer op), the
// command runs, and the agent is ready again, on the CLI and on the page.
func TestScenario_WaitingAgentIsAnsweredFromThePage(t *testing.T) {
	table, rc := claudeTable(t, "claude", "")
	f := newFleet(t, operatorWeb+table)
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)
	browse(t, ctx, "the fleet, live", chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)))

	w := rc.askForPermission(f, "made-by-click")
	// The fleet shows the agent waiting, with the command, live.
	browse(t, ctx, "the fleet shows the waiting agent",
		chromedp.WaitVisible(chromedp.CSS(`tr.unit.is-waiting[data-name="claude"] .prompt`)))
	if p := eval[string](t, ctx, `document.querySelector('tr.unit.is-waiting[data-name="claude"] .prompt').textContent`); !strings.Contains(p, "touch made-by-click") {
		t.Fatalf("the fleet's prompt %q, want the command", p)
	}
	// Its page shows the prompt with the choices the CLI shows.
	browse(t, ctx, "open the claude harness",
		chromedp.Navigate(base+"/h/claude"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#waiting button.choice[data-choice="Yes"]`)),
	)
	// The page's terminal is a writer's: its size becomes the PTY's, and
	// Claude Code redraws the dialog to it (a long choice no longer
	// wraps), so the choices are compared with the CLI's as they are now.
	var labels []string
	f.WaitFor("the page's choices to be the CLI's", 10*time.Second, func() bool {
		labels = eval[[]string](t, ctx, `[...document.querySelectorAll('#waiting button.choice')].map(b => b.textContent.trim())`)
		w = f.waitAgent("claude", "waiting")
		return slices.Equal(labels, w.Choices)
	})
	if p := eval[string](t, ctx, `document.querySelector('#waiting .prompt').textContent`); !strings.Contains(p, "touch made-by-click") {
		t.Fatalf("the page's prompt %q, want the command", p)
	}
	saveScreenshotOf(t, ctx, "dashboard-waiting.png")

	browse(t, ctx, "click Yes", clickLive(`#waiting button.choice[data-choice="Yes"]`))
	if r := f.waitAgent("claude", "ready"); r.AgentState != "ready" {
		t.Fatalf("after the click: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(rc.work, "made-by-click")); err != nil {
		t.Fatalf("the command approved by the click did not run: %v", err)
	}
	browse(t, ctx, "the page shows the agent ready",
		chromedp.WaitVisible(chromedp.CSS(`#agent-state.ag-ready`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#waiting`)),
	)
}
