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

	"github.com/chromedp/chromedp"

	"github.com/harness-dev/harness/internal/agent/modelapi"
	"github.com/harness-dev/harness/internal/api"
)

// TestScenario_AgentTurnsShowOnItsHarnessPage: a real Claude Code (from
// npm, against the scripted model server) is given a prompt typed into
// its terminal on the dashboard, with an env_file secret in it; the model
// answers with a shell call, approved by the page's button, then text.
// The harness page's turns section then shows the prompt (the secret
// masked, as `harness turns` shows it), the answer, the Bash call with
// its outcome and the tokens, live, without a reload; after a restart, the
// first run's link in the runs table shows that run's turns.
func TestScenario_AgentTurnsShowOnItsHarnessPage(t *testing.T) {
	const secret = "turns-page-secret-7c41d9e2"
	envFile := filepath.Join(t.TempDir(), "claude.env")
	if err := os.WriteFile(envFile, []byte("PAGE_SECRET="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A price for the scripted model, so the page shows a cost.
	table, rc := claudeTable(t, "claude", fmt.Sprintf("env_file = %q\nprices = { \"claude-opus-5\" = { input = 2, output = 10, cache_read = 0.5, cache_write = 4 } }\n", envFile))
	f := newFleet(t, operatorWeb+table)
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)
	f.waitAgent("claude", "ready")
	browse(t, ctx, "open the claude harness",
		chromedp.Navigate(base+"/h/claude"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#term[data-attached="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#turns`)),
	)
	// The page's terminal resized the PTY: let Claude Code redraw.
	f.waitAgent("claude", "ready")

	// The prompt is typed into the page's terminal, as a user would.
	rc.api.Script(modelapi.Turn{Shell: "touch made-by-page-turn"}, modelapi.Turn{Text: "Made the file from the page.", Usage: modelapi.Usage{Input: 120, Output: 30}})
	prompt := "Remember " + secret + " and make the file"
	browse(t, ctx, "type the prompt", chromedp.Click(chromedp.CSS("#term")), typeKeys(prompt))
	f.WaitFor("the typed prompt to show (masked)", 30*time.Second, func() bool {
		return slicesContainSub(f.screenLines("claude"), "Remember [masked] and make the file")
	})
	// An Enter that arrives while Claude Code still takes the text can be
	// lost: press it again (at most three times) until the model server
	// has the request.
	before := len(rc.api.Requests())
	for try := range 3 {
		browse(t, ctx, "press Enter", chromedp.Click(chromedp.CSS("#term")), typeKeys("\r"))
		c, cancel := context.WithTimeout(context.Background(), time.Duration(10*(try+1))*time.Second)
		_, _, err := rc.api.WaitRequest(c, before, func(r modelapi.Request) bool { return r.Main })
		cancel()
		if err == nil {
			break
		}
	}
	if w := f.waitAgent("claude", "waiting"); !strings.Contains(w.Prompt, "touch made-by-page-turn") {
		t.Fatalf("not the permission prompt for the scripted command: %+v", w)
	}
	browse(t, ctx, "approve on the page",
		chromedp.WaitVisible(chromedp.CSS(`#waiting button.choice[data-choice="Yes"]`)),
		clickLive(`#waiting button.choice[data-choice="Yes"]`),
	)
	f.waitAgent("claude", "ready")
	if _, err := os.Stat(filepath.Join(rc.work, "made-by-page-turn")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}

	// The turns section follows, with no reload: the prompt masked, the
	// answer, the tool call with its outcome.
	type turnsOnPage struct {
		Head  string   `json:"head"`
		Texts []string `json:"texts"`
		Tools []string `json:"tools"`
		HTML  string   `json:"html"`
	}
	read := func() turnsOnPage {
		return eval[turnsOnPage](t, ctx, `(() => { const s = document.getElementById('turns'); if (!s) return {head: '', texts: [], tools: [], html: ''};
			return {head: (s.querySelector('h2') || {}).textContent || '', html: s.outerHTML,
				texts: [...s.querySelectorAll('li.turn')].map(li => li.querySelector('.role').textContent + ': ' + ((li.querySelector('.text') || {}).textContent || '')),
				tools: [...s.querySelectorAll('.tool')].map(d => d.textContent.replace(/\s+/g, ' ').trim())}; })()`)
	}
	has := func(list []string, want string) bool {
		for _, s := range list {
			if strings.Contains(s, want) {
				return true
			}
		}
		return false
	}
	var got turnsOnPage
	f.WaitFor("the page's turns to show the turn", 20*time.Second, func() bool {
		got = read()
		return has(got.Texts, "user: Remember [masked] and make the file") && has(got.Texts, "assistant: Made the file from the page.") &&
			has(got.Tools, "Bash ok") && has(got.Tools, "touch made-by-page-turn")
	})
	if strings.Contains(got.HTML, secret) {
		t.Fatalf("the turns section shows the env_file secret:\n%s", got.HTML)
	}
	// What the page shows is what `harness turns` shows.
	var res api.TurnsResult
	f.MustJSON(&res, "turns", "claude")
	if !strings.Contains(got.Head, fmt.Sprintf("run %d", res.RunID)) ||
		!strings.Contains(got.HTML, fmt.Sprintf("tokens in %d, out %d", res.Tokens.Input, res.Tokens.Output)) ||
		!strings.Contains(got.HTML, "session "+res.SessionID) || res.SessionID == "" {
		t.Fatalf("the page's turns (%q) are not the CLI's (run %d, session %q, tokens %+v):\n%s", got.Head, res.RunID, res.SessionID, res.Tokens, got.HTML)
	}
	// Nothing the dashboard renders outside the terminal (whose rows are
	// the program's own output, as `harness attach` shows it) carries the
	// secret; nor does the turns fragment the page fetches.
	outside := eval[string](t, ctx, `(() => { const b = document.body.cloneNode(true); const term = b.querySelector('#term'); if (term) term.remove(); return b.innerHTML; })()`)
	frag := eval[string](t, ctx, `fetch('/h/claude?fragment=turns', {credentials: 'same-origin'}).then(r => r.text())`)
	if strings.Contains(outside, secret) || strings.Contains(frag, secret) || !strings.Contains(frag, "Remember [masked]") {
		t.Fatalf("the secret shows on the page (outside the terminal %v, in the fragment %v):\n%s", strings.Contains(outside, secret), strings.Contains(frag, secret), frag)
	}
	if res.CostUSD == nil {
		t.Fatalf("turns --json has no cost for model %q with its price set", res.Model)
	}
	if want := fmt.Sprintf("$%.4f", *res.CostUSD); !strings.Contains(got.HTML, `<span class="cost">`+want+`</span>`) {
		t.Fatalf("the page's cost is not the CLI's %s:\n%s", want, got.HTML)
	}
	// The README's picture is of the turns section: the terminal above it
	// shows the typed secret, as `harness attach` does (the program's own
	// output is not masked; `harness screen` is).
	var png []byte
	for try := 0; ; try++ {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		b, err := chromedp.Run(c, chromedp.Screenshot(chromedp.CSS(`#turns`)))
		cancel()
		if err == nil {
			png = b
			break
		}
		if try == 2 { // the section is redrawn when the agent's state changes
			t.Fatalf("screenshot of the turns: %v", err)
		}
	}
	saveScreenshot(t, "dashboard-turns.png", png)

	// A past run: after a restart, the first run's link shows its turns.
	first := res.RunID
	f.MustRun("restart", "claude")
	f.waitAgent("claude", "ready")
	var runs []api.Run
	f.MustJSON(&runs, "runs", "claude")
	if len(runs) < 2 || runs[len(runs)-1].ID == first {
		t.Fatalf("runs after the restart: %+v", runs)
	}
	link := fmt.Sprintf(`a[href="/h/claude?run=%d#turns"]`, first)
	browse(t, ctx, "open the page again", chromedp.Navigate(base+"/h/claude"), chromedp.WaitVisible(chromedp.CSS(link)))
	// The link is clicked in the page: the live part it sits in may be
	// redrawn by an event between finding it and a synthesized click.
	eval[bool](t, ctx, fmt.Sprintf(`(() => { document.querySelector(%q).click(); return true; })()`, link))
	browse(t, ctx, "the chosen run's page", chromedp.WaitVisible(chromedp.CSS(`#turns:not([data-follow])`)))
	got = read()
	if !strings.Contains(got.Head, fmt.Sprintf("run %d", first)) || !has(got.Texts, "assistant: Made the file from the page.") || !has(got.Tools, "Bash ok") {
		t.Fatalf("the chosen run's turns: %+v", got)
	}
	if shown := eval[string](t, ctx, `(document.querySelector('details.runs tr.shown td') || {}).textContent || ''`); shown != fmt.Sprint(first) {
		t.Fatalf("the runs table marks run %q, want %d", shown, first)
	}
	// On a phone the turns wrap: nothing in the section reaches past the
	// screen's right edge.
	browse(t, ctx, "the chosen run on a phone", chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#turns .turn`)))
	if right := eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll('#turns, #turns *')].map(e => e.getBoundingClientRect().right))`); right > 390 {
		t.Fatalf("at 390x844 the turns reach %v px: they scroll sideways", right)
	}
}
