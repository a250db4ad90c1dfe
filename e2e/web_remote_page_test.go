//go:build e2e

package e2e

import (
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// remotePageFleet is the second daemon of the remote page's tests: the
// demo agent in a worktree of a temp repository, asking to edit
// keep.txt, and "talker", a Claude Code stand-in whose hook names a
// transcript (its turns), with markup in its text.
func remotePageFleet(t *testing.T) string {
	repo := changesRepo(t)
	dir := t.TempDir()
	transcript := filepath.Join(dir, "t.jsonl")
	lines := `{"type":"user","sessionId":"s1","message":{"role":"user","content":"remote-turn-question <b>bold</b>"}}
{"type":"assistant","sessionId":"s1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"remote-turn-answer <script>alert(1)</script>"}]}}
`
	if err := os.WriteFile(transcript, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "talker.sh")
	body := `#!/bin/sh
"$HB" hook Notification '{"session_id":"s1","transcript_path":"` + transcript + `","notification_type":"permission_prompt","message":"Allow talker?"}'
exec sleep 100000
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return demoInWorktree(repo) + fmt.Sprintf(`prompt = "tidy keep.txt"
enabled = true

[harness.talker]
cmd = %q
agent = "claude-code"
mcp_wire = false
env = { HB = %q, HOME = %q }
enabled = true
`, script, harnessBin, dir)
}

// TestScenario_ARemoteRowHasAPageOfItsOwnOverSSH: behind a real sshd, a
// second daemon runs the demo agent and a transcript-keeping agent; the
// local page links box's rows to pages of their own, which show the
// remote screen's text (as the host's own `screen` has it), the agent's
// turns (escaped) and, once the agent edited keep.txt after a Yes sent
// from that page, its changes. Through ro (a read key) the same page
// reads but its actions are disabled, and posted anyway are refused by
// that host's bridge in its words; a page of dead (a silent port) says
// why at once.
func TestScenario_ARemoteRowHasAPageOfItsOwnOverSSH(t *testing.T) {
	remote, _, f, _ := hostsRigWith(t, remotePageFleet(t))
	remote.waitAgent("demo", "waiting")
	remote.waitAgent("talker", "waiting")
	page := newPageClient(t, f.webBase(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	f.WaitFor("box's rows linking to their pages", 20*time.Second, func() bool {
		_, frag := page.get("/?fragment=1")
		box := hostSection(frag, "box")
		return strings.Contains(box, `<a href="/host/box/h/demo">demo</a>`) && strings.Contains(box, `<a href="/host/box/h/talker">talker</a>`)
	})

	var dialog string
	for _, l := range remote.screenLines("demo") {
		if strings.Contains(l, "Allow edit to keep.txt?") {
			dialog = l
		}
	}
	if dialog == "" {
		t.Fatalf("the demo agent's own screen shows no dialog: %q", remote.screenLines("demo"))
	}
	_, body := page.get("/host/box/h/demo")
	for _, want := range []string{html.EscapeString(dialog), `action="/host/box/h/demo/answer"`, "no changes against main"} {
		if !strings.Contains(body, want) {
			t.Fatalf("box's demo page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, " disabled") {
		t.Fatalf("box's key grants write and input, yet a button is disabled:\n%s", body)
	}

	// Answered from its page, the agent edits keep.txt; its page shows it.
	if st, b, _ := page.post("/host/box/h/demo/answer", "choice=Yes"); st != http.StatusOK {
		t.Fatalf("answer through box's demo page: %d %s", st, b)
	}
	remote.waitAgent("demo", "ready")
	_, body = page.get("/host/box/h/demo")
	changes := body[strings.Index(body, `id="remote-changes"`):]
	if !strings.Contains(changes, "keep.txt") || !strings.Contains(changes, "written by the harness demo agent") {
		t.Fatalf("box's demo page after the edit lacks its changes:\n%s", changes)
	}

	_, body = page.get("/host/box/h/talker")
	for _, want := range []string{"remote-turn-question &lt;b&gt;bold&lt;/b&gt;", "remote-turn-answer &lt;script&gt;alert(1)&lt;/script&gt;", "Allow talker?"} {
		if !strings.Contains(body, want) {
			t.Fatalf("box's talker page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Fatal("box's talker page carries the transcript's markup")
	}

	// ro, a read key to the same daemon: it reads, its buttons are
	// disabled, and posted anyway its bridge refuses in its words.
	_, body = page.get("/host/ro/h/talker")
	if !strings.Contains(body, "remote-turn-answer") || !strings.Contains(body, `data-act="stop" disabled title="stop needs write; this host's key grants read"`) {
		t.Fatalf("ro's talker page:\n%s", body)
	}
	if st, b, _ := page.post("/host/ro/h/talker/restart", ""); st != http.StatusForbidden || !strings.Contains(b, "not_permitted") || !strings.Contains(b, "host ro") || !strings.Contains(b, "bridge grants") {
		t.Fatalf("restart through ro: %d %s", st, b)
	}

	// dead never answers: its page says so at once, in every section.
	took, body := page.get("/host/dead/h/idle")
	if strings.Count(body, "not reachable now") < 3 || took > 2*time.Second {
		t.Fatalf("dead's page took %s:\n%s", took, body)
	}
	t.Logf("dead's page: %s", took)
}

// TestScenario_ARemoteRowsPageAtPhoneSize: in a real Chromium at a
// phone's size, a remote row's name on the fleet opens its page, whose
// screen and turns show without the page scrolling sideways.
func TestScenario_ARemoteRowsPageAtPhoneSize(t *testing.T) {
	remote, _, f, _ := hostsRigWith(t, remotePageFleet(t))
	remote.waitAgent("demo", "waiting")
	remote.waitAgent("talker", "waiting")
	ctx := newBrowser(t, 390, 844)
	browse(t, ctx, "a phone", chromedp.EmulateViewport(390, 844))
	signIn(t, ctx, f.webBase(), strings.TrimSpace(f.MustRun("--state-dir", f.State, "mcp", "token")))
	browse(t, ctx, "open talker's page from its row",
		chromedp.WaitVisible(chromedp.CSS(`section.hostgroup[data-host="box"] tr.unit[data-name="talker"] td.name a`)),
		clickLive(`section.hostgroup[data-host="box"] tr.unit[data-name="talker"] td.name a`),
		chromedp.WaitVisible(chromedp.CSS(`#remote-screen h2`)), // talker draws nothing: its screen is blank
		chromedp.WaitVisible(chromedp.CSS(`#remote-turns li.turn`)),
	)
	if p := eval[string](t, ctx, `location.pathname`); p != "/host/box/h/talker" {
		t.Fatalf("the row's link opened %s", p)
	}
	if w := eval[[]float64](t, ctx, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("a remote row's page is %v px wide in a %v px viewport: it scrolls sideways", w[0], w[1])
	}
	if txt := eval[string](t, ctx, `document.querySelector('#remote-turns').textContent`); !strings.Contains(txt, "remote-turn-answer <script>alert(1)</script>") {
		t.Errorf("the turns as the phone shows them: %q", txt)
	}
	saveScreenshotOf(t, ctx, "dashboard-remote-row-390x844.png")
}
