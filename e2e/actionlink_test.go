//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// linkMessage is a waiting message with its action links.
type linkMessage struct {
	Event   string `json:"event"`
	Harness string `json:"harness"`
	Prompt  string `json:"prompt"`
	Actions []struct {
		Label   string `json:"label"`
		Command string `json:"command"`
		URL     string `json:"url"`
		Method  string `json:"method"`
	} `json:"actions"`
}

// link is the URL of the action link of choice in m, failing without one.
func (m linkMessage) link(t *testing.T, choice string) string {
	t.Helper()
	for _, a := range m.Actions {
		if a.Method == "POST" && a.Label == choice && a.URL != "" {
			return a.URL
		}
	}
	t.Fatalf("no action link for %q in %+v", choice, m.Actions)
	return ""
}

// decodeLinks decodes a json sink's message.
func decodeLinks(t *testing.T, body string) linkMessage {
	t.Helper()
	var m linkMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return m
}

// hit requests url as a phone would (no cookie, no Origin: an ntfy
// button or a browser opening the link), returning status and body.
func hit(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	c := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// demoLinksConfig is a demo agent that asks before it edits work's
// README, a json and an ntfy receiver on r with action links.
func demoLinksConfig(work, url string) string {
	return fmt.Sprintf(`[daemon]
mcp_http = "127.0.0.1:0"
%[1]s
[notify.json]
url = "%[2]s/json"
on = ["waiting"]
action_links = true

[notify.ntfy]
url = "%[2]s/ntfy"
format = "ntfy"
on = ["waiting"]
action_links = true
action_ttl = "5m"
`, demoHarness(work, "Edit the README"), url)
}

// TestScenario_ALinkOfAnEarlierPromptIsGoneOnceAnotherIsOnScreen: the
// demo agent asks to edit its README and the json and ntfy messages
// carry links (ntfy as http POST buttons); the prompt is answered No
// from the CLI and the agent asks again, the same words: the first
// message's Yes link is 410 and edits nothing, though a prompt that
// reads the same is on screen; the second message's Yes link, pressed as
// ntfy's button would (a POST, no cookie), edits the README once.
func TestScenario_ALinkOfAnEarlierPromptIsGoneOnceAnotherIsOnScreen(t *testing.T) {
	work := t.TempDir()
	readme := filepath.Join(work, "README.md")
	if err := os.WriteFile(readme, []byte("# before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newHookReceiver(t)
	f := newFleet(t, demoLinksConfig(work, r.URL))
	base := f.webBase()
	first := decodeLinks(t, r.waitOn(t, "/json", "Allow edit to README.md?", 1)[0].Body)
	oldYes := first.link(t, "Yes")
	if !strings.HasPrefix(oldYes, base+"/a/") || first.Actions[0].Label != "Yes" || first.Actions[1].Label != "No" {
		t.Fatalf("the first message's actions: %+v (dashboard %s)", first.Actions, base)
	}
	ntfy := r.waitOn(t, "/ntfy", "Allow edit to README.md?", 1)[0]
	buttons := regexp.MustCompile(`http, (Yes|No), (\S+), method=POST, clear=true`).FindAllStringSubmatch(ntfy.Header.Get("Actions"), -1)
	if len(buttons) != 2 || buttons[0][1] != "Yes" || !strings.HasPrefix(buttons[0][2], base+"/a/") || buttons[0][2] == oldYes {
		t.Fatalf("ntfy Actions: %q", ntfy.Header.Get("Actions"))
	}

	f.MustRun("answer", "demo", "No")
	f.waitAgent("demo", "ready")
	f.MustRun("send", "demo", "Edit it after all", "--enter")
	w := f.waitAgent("demo", "waiting")
	if w.Prompt != "Allow edit to README.md?" {
		t.Fatalf("the second prompt: %+v", w)
	}
	second := r.waitOn(t, "/json", "Allow edit to README.md?", 2)[1]
	if status, body := hit(t, "POST", oldYes); status != http.StatusGone || !strings.Contains(body, "demo is running; its agent (demo) is waiting on: Allow edit to README.md?") {
		t.Fatalf("the first prompt's Yes link on the second prompt: %d %s", status, body)
	}
	if b, _ := os.ReadFile(readme); string(b) != "# before\n" {
		t.Fatalf("an earlier prompt's link edited the README:\n%s", b)
	}
	if w := f.waitAgent("demo", "waiting"); w.Prompt != "Allow edit to README.md?" {
		t.Fatalf("the agent left the prompt: %+v", w)
	}
	ntfy2 := r.waitOn(t, "/ntfy", "Allow edit to README.md?", 2)[1]
	yes := regexp.MustCompile(`http, Yes, (\S+), method=POST`).FindStringSubmatch(ntfy2.Header.Get("Actions"))
	if yes == nil || yes[1] == oldYes || decodeLinks(t, second.Body).link(t, "Yes") == yes[1] {
		t.Fatalf("the second ntfy Actions: %q", ntfy2.Header.Get("Actions"))
	}
	if status, body := hit(t, "POST", yes[1]); status != http.StatusOK || !strings.Contains(body, "Answered <strong>Yes</strong>") {
		t.Fatalf("the second prompt's Yes link: %d %s", status, body)
	}
	f.waitAgent("demo", "ready")
	if b, _ := os.ReadFile(readme); !strings.Contains(string(b), "written by the harness demo agent") {
		t.Fatalf("README after the link's Yes:\n%s", b)
	}
	if status, _ := hit(t, "POST", decodeLinks(t, second.Body).link(t, "No")); status != http.StatusGone {
		t.Fatalf("the json No link of the answered prompt: %d", status)
	}
	if status, body := hit(t, "GET", base+"/a/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); status != http.StatusNotFound || !strings.Contains(body, "do not survive a restart") {
		t.Fatalf("an unknown link: %d %s", status, body)
	}
	logText, _ := os.ReadFile(f.LogPath)
	if id := strings.TrimPrefix(yes[1], base+"/a/"); strings.Contains(string(logText), id) {
		t.Error("the daemon's log carries an action link's id")
	}
}
