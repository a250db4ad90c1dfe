//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/agent/modelapi"
)

// linkSink is a JSON webhook receiver standing in for a notification
// channel: it keeps every message.
type linkSink struct {
	*httptest.Server
	mu   sync.Mutex
	msgs []linkMsg
}

type linkMsg struct {
	Event   string `json:"event"`
	Prompt  string `json:"prompt"`
	Actions []struct {
		Label, URL, Method string
	} `json:"actions"`
}

func newLinkSink(t *testing.T) *linkSink {
	s := &linkSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m linkMsg
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) == nil {
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// links are the action links of the first message about prompt, by
// choice; nil while there is none.
func (s *linkSink) links(prompt string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if m.Event != "waiting" || !strings.Contains(m.Prompt, prompt) {
			continue
		}
		out := map[string]string{}
		for _, a := range m.Actions {
			if a.Method == "POST" && a.URL != "" {
				out[a.Label] = a.URL
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// request sends method to url as a phone's browser or an ntfy button
// does: no cookie, no Origin.
func request(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAgent_ClaudeCodeIsAnsweredFromItsNotificationsLink: a real Claude
// Code (--permission-mode default) asks to run `touch`; the json webhook
// sink's message carries a link per choice on the dashboard's address; a
// GET of the Yes link shows the command and changes nothing; its POST
// runs the command and the agent goes on; the same link again and the No
// link answer 410.
func TestAgent_ClaudeCodeIsAnsweredFromItsNotificationsLink(t *testing.T) {
	sink := newLinkSink(t)
	af := newAgentFleetEnv(t, claudeSpec, modelapi.AgentOptions{Trusted: true}, nil, t.TempDir(), "",
		"[daemon]", `mcp_http = "127.0.0.1:0"`,
		"[notify.phone]", fmt.Sprintf("url = %q", sink.URL), `on = ["waiting"]`, "action_links = true",
		// The fleet's table goes on after these lines (stop_grace): a
		// harness never started takes them.
		"[harness.spare]", `cmd = "true"`)
	var info struct {
		DashboardURL string `json:"dashboard_url"`
	}
	af.MustJSON(&info, "daemon-info")
	af.waitState("ready")
	af.api.Script(modelapi.Turn{Shell: "touch made-by-link"}, modelapi.Turn{Text: "Made the file."})
	af.ask("Make the file")
	w := af.waitAgent("the permission dialog", func(w agentWait) bool {
		return w.AgentState == "waiting" && strings.Contains(w.Prompt, "touch made-by-link") && len(w.Choices) > 1
	})
	var links map[string]string
	af.WaitFor("the waiting message's links", time.Minute, func() bool {
		links = sink.links("touch made-by-link")
		return len(links) == len(w.Choices)
	})
	yes, no := links["Yes"], links["No"]
	if !strings.HasPrefix(yes, info.DashboardURL+"a/") || !strings.HasPrefix(no, info.DashboardURL+"a/") {
		t.Fatalf("links %v, dashboard %s", links, info.DashboardURL)
	}
	made := filepath.Join(af.work, "made-by-link")

	if st, body := request(t, "GET", yes); st != http.StatusOK || !strings.Contains(body, "touch made-by-link") || !strings.Contains(body, `class="answer">Yes<`) {
		t.Fatalf("GET of the Yes link: %d %s", st, body)
	}
	if r := af.row(); r.AgentState != "waiting" || !strings.Contains(r.Prompt, "touch made-by-link") {
		t.Fatalf("after a GET the agent left its prompt: %+v", r)
	}
	if _, err := os.Stat(made); err == nil {
		t.Fatal("a GET of the link ran the command")
	}

	if st, body := request(t, "POST", yes); st != http.StatusOK || !strings.Contains(body, "Answered <strong>Yes</strong>") {
		t.Fatalf("POST of the Yes link: %d %s", st, body)
	}
	af.WaitFor("the approved command's file", time.Minute, func() bool { _, err := os.Stat(made); return err == nil })
	af.waitState("ready")
	for what, url := range map[string]string{"the Yes link again": yes, "the No link": no} {
		if st, body := request(t, "POST", url); st != http.StatusGone || !strings.Contains(body, "answered through one of its links already") ||
			!strings.Contains(body, "its agent (claude-code) is ready") {
			t.Errorf("%s: %d %s", what, st, body)
		}
	}
}
