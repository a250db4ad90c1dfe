package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// linkRE is an action link on the test's public URL.
var linkRE = regexp.MustCompile(`https://box\.example:7443/a/[A-Za-z0-9_-]{32}`)

// waitingWithID is a waiting prompt of svc's run 1 with its prompt id.
func waitingWithID(id uint64, prompt string, choices ...string) api.Event {
	ev := waitingOf(api.AgentWaiting, api.WaitingPermission, prompt, choices...)
	ev.Agent.PromptID = id
	return ev
}

// TestScenario_AWaitingMessageCarriesOneLinkPerChoice: with action_links,
// each sink gets links of its own for the waiting prompt, one per
// choice: json as actions with a url and method POST, ntfy as http POST
// buttons, slack and discord in the text; a table without action_links
// gets none. The links of all tables answer one prompt: once one is
// claimed, every other is used.
func TestScenario_AWaitingMessageCarriesOneLinkPerChoice(t *testing.T) {
	recv := map[string]*receiver{}
	tables := map[string]*config.Notify{}
	for _, f := range []string{config.FormatJSON, config.FormatNtfy, config.FormatSlack, config.FormatDiscord, "plain"} {
		r := newReceiver(t)
		tb := table(f, r.URL)
		tb.ActionLinks, tb.ActionTTL = true, time.Minute
		if f == "plain" {
			tb.Format, tb.ActionLinks = config.FormatJSON, false
		} else {
			tb.Format = f
		}
		recv[f], tables[f] = r, tb
	}
	store := actionlink.New(nil)
	n := New(Options{Source: fakeSource{}, Host: "box", Links: store, PublicURL: func() string { return "https://box.example:7443/" },
		Dashboard: func(h string) string { return "http://127.0.0.1:7330/h/" + h }})
	n.Apply(tables)
	t.Cleanup(n.Close)
	observe(n, []api.Event{waitingWithID(5, "touch made-by-agent", "Yes", "No")})
	for _, r := range recv {
		r.wait(t, 1)
	}

	m := recv[config.FormatJSON].message(t, 0)
	if len(m.Actions) < 2 || m.Actions[0].Label != "Yes" || m.Actions[1].Label != "No" ||
		m.Actions[0].Method != http.MethodPost || !linkRE.MatchString(m.Actions[0].URL) || !linkRE.MatchString(m.Actions[1].URL) {
		t.Fatalf("json actions: %+v", m.Actions)
	}
	for i, a := range m.Actions[:2] {
		l, err := store.Look(strings.TrimPrefix(a.URL, "https://box.example:7443/a/"))
		if err != nil || l.Prompt != (actionlink.Prompt{Harness: "svc", RunID: 1, PromptID: 5}) || l.Number != i+1 ||
			l.Choice != a.Label || l.Agent != "claude-code" || l.Text != "touch made-by-agent" || time.Until(l.Expires) > time.Minute {
			t.Errorf("link %d: %+v %v", i, l, err)
		}
	}
	if plain := recv["plain"].message(t, 0); linkRE.MatchString(recv["plain"].bodies[0]) || plain.Actions[0].Method != "" {
		t.Errorf("a table without action_links carries links: %+v", plain.Actions)
	}

	ntfy := recv[config.FormatNtfy].got[0].Header.Get("Actions")
	want := regexp.MustCompile(`^http, Yes, (https://\S+), method=POST, clear=true; http, No, (https://\S+), method=POST, clear=true$`)
	got := want.FindStringSubmatch(ntfy)
	if got == nil || !linkRE.MatchString(got[1]) || !linkRE.MatchString(got[2]) || got[1] == m.Actions[0].URL {
		t.Fatalf("ntfy Actions: %q", ntfy)
	}
	if linkRE.MatchString(recv[config.FormatNtfy].bodies[0]) {
		t.Errorf("ntfy's text repeats its buttons' links: %s", recv[config.FormatNtfy].bodies[0])
	}
	for _, f := range []string{config.FormatSlack, config.FormatDiscord} {
		var chat map[string]any
		json.Unmarshal([]byte(recv[f].bodies[0]), &chat)
		text, _ := chat["text"].(string)
		if f == config.FormatDiscord {
			text, _ = chat["content"].(string)
		}
		if links := linkRE.FindAllString(text, -1); len(links) != 2 || !strings.Contains(text, "Yes: "+links[0]) || !strings.Contains(text, "No: "+links[1]) {
			t.Errorf("%s text: %s", f, text)
		}
	}

	if _, err := store.Claim(strings.TrimPrefix(got[2], "https://box.example:7443/a/")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Look(strings.TrimPrefix(m.Actions[0].URL, "https://box.example:7443/a/")); !errors.Is(err, actionlink.ErrUsed) {
		t.Errorf("the json Yes link after ntfy's No was used: %v", err)
	}

	// `harness notify test` shows the buttons, with sample links.
	if _, err := n.Test(context.Background(), config.FormatNtfy); err != nil {
		t.Fatal(err)
	}
	recv[config.FormatNtfy].wait(t, 1)
	recv[config.FormatNtfy].mu.Lock()
	sample := recv[config.FormatNtfy].got[1].Header.Get("Actions")
	recv[config.FormatNtfy].mu.Unlock()
	if !strings.HasPrefix(sample, "http, Yes, https://box.example:7443/a/sample-of-notify-test, method=POST") {
		t.Errorf("notify test's Actions: %q", sample)
	}

	// A later prompt that reads the same is news to a table with links:
	// the links of the first no longer answer.
	observe(n, []api.Event{working, waitingWithID(6, "touch made-by-agent", "Yes", "No")})
	recv[config.FormatJSON].wait(t, 1)
	if m2 := recv[config.FormatJSON].message(t, 1); m2.Actions[0].URL == m.Actions[0].URL || !linkRE.MatchString(m2.Actions[0].URL) {
		t.Errorf("the second prompt's links: %+v", m2.Actions)
	}
}

// TestRenderActionLinks: ntfy shows at most three buttons (the first two
// choices and the last), the text lists the others; a chat message cut
// to its bound keeps its links whole, cutting the prompt instead.
func TestRenderActionLinks(t *testing.T) {
	m := sampleMessage()
	choices := []string{"Yes", "Yes, and always allow access to /src", "Yes, and switch to auto mode", "No"}
	m.Choices = choices
	var links []Action
	for i, c := range choices {
		links = append(links, Action{Label: c, URL: "https://box/a/id" + string(rune('0'+i)), Method: http.MethodPost})
	}
	m.Actions = append(links, m.Actions...)
	body, _, h, _ := Render(config.FormatNtfy, m)
	if got := h.Get("Actions"); got != "http, Yes, https://box/a/id0, method=POST, clear=true; "+
		"http, Yes and always allow access to /src, https://box/a/id1, method=POST, clear=true; "+
		"http, No, https://box/a/id3, method=POST, clear=true" {
		t.Errorf("ntfy Actions: %q", got)
	}
	if !strings.Contains(string(body), "Yes, and switch to auto mode: https://box/a/id2") || strings.Contains(string(body), "id0") {
		t.Errorf("ntfy text: %s", body)
	}
	if h.Get("Click") != "http://127.0.0.1:7330/h/rev" {
		t.Errorf("ntfy Click: %q", h.Get("Click"))
	}

	m.Prompt = strings.Repeat("a very long command line ", 200)
	body, _, _, _ = Render(config.FormatDiscord, m)
	var d struct{ Content string }
	json.Unmarshal(body, &d)
	if len(d.Content) > discordMax || !strings.Contains(d.Content, "No: https://box/a/id3") || !strings.Contains(d.Content, "…") {
		t.Errorf("discord, cut (%d bytes): %s", len(d.Content), d.Content)
	}
}
