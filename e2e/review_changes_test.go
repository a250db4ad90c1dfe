//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// demoInWorktree is the demo agent (harness demo-agent) in a worktree of
// repo, editing keep.txt after its permission prompt.
func demoInWorktree(repo string) string {
	return fmt.Sprintf(`
[harness.demo]
cmd = %q
args = ["demo-agent", "--file", "keep.txt", "--step", "200ms"]
agent = "demo"
worktree = { repo = %q, base = "main" }
`, harnessBin, repo)
}

// demoTurn gives the demo agent a task, allows its edit, and waits until
// it is ready again.
func (f *fleet) demoTurn(task string) {
	f.T.Helper()
	f.waitAgent("demo", "ready")
	f.MustRun("send", "demo", task, "--enter")
	f.waitAgent("demo", "waiting")
	f.MustRun("answer", "demo", "Yes")
	f.waitAgent("demo", "ready")
}

// screenHas waits until the demo agent's screen shows s.
func (f *fleet) screenHas(name, s string) {
	f.T.Helper()
	f.WaitFor(name+"'s screen to show "+s, 30*time.Second, func() bool {
		return strings.Contains(strings.Join(f.screenLines(name), "\n"), s)
	})
}

// TestScenario_AFinishedTurnIsReviewedFromAPhone: the demo agent, in a
// worktree of a temp repository, edits keep.txt after its permission
// prompt and is ready again; turn_done reaches a command sink with the
// diff stat and a link to the Changes view; that link, opened in a real
// Chromium at phone size, shows the added lines without the page
// scrolling sideways; a comment on a line and Send review reach the
// agent as path:line: comment.
func TestScenario_AFinishedTurnIsReviewedFromAPhone(t *testing.T) {
	repo := changesRepo(t)
	sink := filepath.Join(t.TempDir(), "sink.jsonl")
	f := newFleet(t, operatorWeb+demoInWorktree(repo)+fmt.Sprintf(`
[notify.cmd]
command = ["sh", "-c", "cat >> %s"]
on = ["turn_done"]
`, sink))
	f.MustRun("start", "demo")
	f.demoTurn("tidy keep.txt")

	var m struct {
		Event   string `json:"event"`
		Harness string `json:"harness"`
		Reason  string `json:"reason"`
		Diff    *struct{ Files, Added, Deleted int }
		Actions []struct{ Label, Command, URL string }
	}
	f.WaitFor("turn_done at the command sink", 30*time.Second, func() bool {
		b, _ := os.ReadFile(sink)
		line, _, _ := strings.Cut(string(b), "\n")
		return json.Unmarshal([]byte(line), &m) == nil
	})
	link := ""
	for _, a := range m.Actions {
		if a.URL != "" {
			link = a.URL
		}
	}
	if m.Event != "turn_done" || m.Harness != "demo" || m.Diff == nil || m.Diff.Files != 1 || m.Diff.Added != 2 || m.Diff.Deleted != 0 ||
		!strings.HasSuffix(link, "/h/demo#changes") || !strings.Contains(m.Reason, "1 file changed, +2 -0") {
		t.Fatalf("turn_done message: %+v (link %q)", m, link)
	}

	ctx := newBrowser(t, 390, 844)
	browse(t, ctx, "a phone", chromedp.EmulateViewport(390, 844))
	signIn(t, ctx, f.webBase(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	added := `#changes tr.l-add[data-path="keep.txt"][data-line="5"]`
	browse(t, ctx, "open the link of the notification",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(added)),
	)
	if w := eval[[]float64](t, ctx, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("the Changes view is %v px wide in a %v px viewport: it scrolls sideways", w[0], w[1])
	}
	if code := eval[string](t, ctx, `document.querySelector('`+added+` td.code').textContent`); !strings.Contains(code, "written by the harness demo agent") {
		t.Errorf("line 5 of keep.txt on the page: %q", code)
	}
	browse(t, ctx, "comment on line 5",
		chromedp.Click(chromedp.CSS(added)),
		chromedp.WaitVisible(chromedp.CSS(`#changes tr.cbox textarea`)),
		chromedp.SendKeys(chromedp.CSS(`#changes tr.cbox textarea`), "say who wrote it"),
		chromedp.Click(chromedp.CSS(`#changes tr.cbox .add-comment`)),
		chromedp.WaitVisible(chromedp.CSS(`#review-list li`)),
		chromedp.WaitVisible(chromedp.CSS(`#changes tr.cmt`)),
	)
	eval[bool](t, ctx, `(window.scrollTo(0, document.getElementById('changes').offsetTop - 8), true)`)
	saveScreenshotOf(t, ctx, "changes.png")
	browse(t, ctx, "send the review",
		chromedp.Click(chromedp.CSS(`#send-review`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#review-list li`)),
	)
	f.WaitFor("the page to say the review went", 10*time.Second, func() bool {
		return strings.HasPrefix(eval[string](t, ctx, `document.getElementById('toast').textContent`), "review: ")
	})
	f.screenHas("demo", "keep.txt:5: say who wrote it")

	// The review is the agent's next task: it edits again, and its
	// turn_done brings the page's Changes view up to date.
	f.waitAgent("demo", "waiting")
	f.MustRun("answer", "demo", "Yes")
	browse(t, ctx, "the Changes view follows the next turn",
		chromedp.WaitVisible(chromedp.CSS(`body[data-changes-refreshed]`)),
		chromedp.WaitVisible(chromedp.CSS(`#changes tr.l-add[data-path="keep.txt"][data-line="7"]`)),
	)
}

// TestScenario_AReviewIsHeldUntilTheAgentIsReadyAndDroppedWithItsRun:
// `harness review` while the agent waits on its dialog answers queued and
// types nothing; once the agent is ready again the review is typed to it
// as one message; a review still held when the harness stops is dropped,
// and the CLI waiting for it says why. Bad comments are refused.
func TestScenario_AReviewIsHeldUntilTheAgentIsReadyAndDroppedWithItsRun(t *testing.T) {
	repo := changesRepo(t)
	f := newFleet(t, demoInWorktree(repo))
	f.MustRun("start", "demo")
	f.waitAgent("demo", "ready")
	for _, bad := range []string{"keep.txt: no line", "../x:1: out of the checkout", "/etc/passwd:1: absolute"} {
		if out, _, code := f.Run("review", "demo", "--comment", bad, "--json"); code == 0 || !strings.Contains(out, "invalid_argument") {
			t.Errorf("review --comment %q: exit %d %s", bad, code, out)
		}
	}
	f.MustRun("send", "demo", "tidy keep.txt", "--enter")
	f.waitAgent("demo", "waiting")
	var res struct{ Status, Text string }
	f.MustJSON(&res, "review", "demo", "--comment", "keep.txt:5: name the author", "--comment", "keep.txt:4: no blank line", "--wait", "0")
	if res.Status != "queued" || !strings.Contains(res.Text, "keep.txt:5: name the author ; keep.txt:4: no blank line") {
		t.Fatalf("review while waiting: %+v", res)
	}
	if strings.Contains(strings.Join(f.screenLines("demo"), "\n"), "name the author") {
		t.Fatalf("the review was typed into the agent's dialog")
	}
	f.MustRun("answer", "demo", "Yes")
	f.screenHas("demo", "keep.txt:5: name the author ; keep.txt:4: no blank line")

	// The review was a new task: the agent works and asks again. A review
	// held now is dropped when the harness stops.
	f.waitAgent("demo", "waiting")
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := f.Run("review", "demo", "--comment", "keep.txt:1: never typed", "--wait", "2m")
		done <- result{o, e, c}
	}()
	f.WaitFor("the review to be queued", 30*time.Second, func() bool {
		return strings.Count(f.MustRun("logs", "demo", "--json"), "review queued") == 2
	})
	f.MustRun("stop", "demo")
	select {
	case r := <-done:
		if r.code == 0 || !strings.Contains(r.errOut, "dropped") || !strings.Contains(r.errOut, "ended before its agent was ready") {
			t.Errorf("review of a run that ended: exit %d, %s%s", r.code, r.out, r.errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("review --wait did not return after the harness stopped")
	}
	if out, _, code := f.Run("review", "demo", "--comment", "keep.txt:1: x", "--json"); code == 0 || !strings.Contains(out, "not_running") {
		t.Errorf("review of a stopped harness: exit %d %s", code, out)
	}
}
