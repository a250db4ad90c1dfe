//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestScenario_ANewAgentIsMadeFromThePageAndAnsweredThere: signed in with
// write, the fleet page links to the New agent form; a bad name comes back
// with the refusal's text and nothing written; the demo agent in a
// worktree of a real repository is made and started from the form, and
// its question answered from its page. The audit log names the page and
// the token for both, and for the page's terminal, which may type. A read-only dashboard token sees no form and is
// refused it (403).
func TestScenario_ANewAgentIsMadeFromThePageAndAnsweredThere(t *testing.T) {
	f := newFleet(t, operatorWeb)
	repo := repoWithOneCommit(t)
	base := f.webBase()
	opTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token"))
	ctx := newBrowser(t, 1280, 900)
	signIn(t, ctx, base, opTok)

	browse(t, ctx, "open the New agent form",
		chromedp.Click(chromedp.CSS("#new-agent-link")),
		chromedp.WaitVisible(chromedp.CSS("#new-agent")),
	)
	if opts := eval[[]string](t, ctx, `[...document.querySelectorAll('#new-agent-select option')].map(o => o.value)`); !slices.Contains(opts, "demo") {
		t.Fatalf("the form's agents are %v, want demo among them", opts)
	}
	fill := func(name string) {
		browse(t, ctx, "fill the form for "+name,
			chromedp.WaitVisible(chromedp.CSS("#new-name")),
		)
		eval[bool](t, ctx, `(() => { const v = (s, x) => document.querySelector(s).value = x;
			v('#new-name', `+jsQuoted(name)+`); v('#new-agent-select', 'demo'); v('#new-prompt', 'tidy the readme');
			v('#new-repo', `+jsQuoted(repo)+`); document.querySelector('#new-worktree').checked = true; return true; })()`)
		browse(t, ctx, "submit "+name, chromedp.Submit(chromedp.CSS("#new-agent")))
	}
	fill("../x")
	browse(t, ctx, "the refusal shows", chromedp.WaitVisible(chromedp.CSS("#new-error")))
	if msg := eval[string](t, ctx, `document.querySelector('#new-error').textContent`); !strings.Contains(msg, "invalid harness name") {
		t.Fatalf("the form's error %q", msg)
	}
	if got := f.harnessDFiles(); len(got) != 0 {
		t.Fatalf("a refused form wrote %v", got)
	}
	fill("p1")
	browse(t, ctx, "the new harness's page",
		chromedp.WaitVisible(chromedp.CSS(`body[data-live="1"]`)),
	)
	if loc := eval[string](t, ctx, `location.pathname`); loc != "/h/p1" {
		t.Fatalf("after the form: at %s, want /h/p1", loc)
	}
	f.waitState("p1", "running")
	if wt := f.worktree("p1"); !wt.Created {
		t.Fatalf("p1's worktree: %+v", wt)
	}
	f.waitAgent("p1", "waiting")
	browse(t, ctx, "answer Yes on the page",
		chromedp.WaitVisible(chromedp.CSS(`#waiting button.choice[data-choice="Yes"]`)),
		clickLive(`#waiting button.choice[data-choice="Yes"]`),
	)
	f.waitAudit("new", "p1", "page", "token:operator")
	f.waitAudit("answer", "p1", "page", "token:operator")
	// Its page's terminal may type: a read-write attach is input, audited.
	f.waitAudit("attach", "p1", "page", "token:operator")

	signOut(t, ctx)
	roTok := strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token", "--dashboard", "--grant", "read,input"))
	signIn(t, ctx, base, roTok)
	if n := eval[int](t, ctx, `document.querySelectorAll('#new-agent-link').length`); n != 0 {
		t.Fatal("a token without write sees the New agent link")
	}
	if st := eval[int](t, ctx, `fetch('/new', {credentials: 'same-origin'}).then(r => r.status)`); st != 403 {
		t.Fatalf("GET /new without write: %d, want 403", st)
	}
	if st := postStatus(t, ctx, "/new", "name=r1&agent=demo", true); st != 403 {
		t.Fatalf("POST /new without write: %d, want 403", st)
	}
	if got := f.harnessDFiles(); !slices.Equal(got, []string{"p1.toml"}) {
		t.Fatalf("harness.d holds %v", got)
	}
}

// jsQuoted quotes s for a JavaScript expression.
func jsQuoted(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
