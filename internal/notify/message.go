package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/config"
)

// Message is what a sink receives: the JSON on a command's stdin and the
// body of the json format; the other formats render it as text.
type Message struct {
	Notifier string    `json:"notifier"`
	Event    string    `json:"event"`
	Harness  string    `json:"harness"`
	Project  string    `json:"project,omitempty"`
	Host     string    `json:"host"`
	Time     time.Time `json:"time"`
	// Title is one line: who and what; Reason says why.
	Title    string `json:"title"`
	Reason   string `json:"reason"`
	State    string `json:"state,omitempty"`
	RunID    uint64 `json:"run_id,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// LastLines are the run's last activity lines (failures).
	LastLines []string `json:"last_lines,omitempty"`
	// WaitingFor, Prompt and Choices describe a waiting agent, Suggested
	// the choice that lets it go on when its adapter knows it; Until is
	// when a limit or a hold ends.
	WaitingFor string     `json:"waiting_for,omitempty"`
	Prompt     string     `json:"prompt,omitempty"`
	Choices    []string   `json:"choices,omitempty"`
	Suggested  string     `json:"suggested,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
	// Diff is a finished turn's diff stat (turn_done): files, added,
	// deleted.
	Diff *api.DiffStat `json:"diff,omitempty"`
	// Actions say how to act: commands to run, and the dashboard link.
	Actions []Action `json:"actions"`
	// Test marks the sample of `harness notify test`.
	Test bool `json:"test,omitempty"`
}

// Action is one way to act on a message: a command or a URL. An action
// link (Method POST) answers the waiting prompt with the choice its
// Label names, once: a GET of it only shows what it would do.
type Action struct {
	Label   string `json:"label"`
	Command string `json:"command,omitempty"`
	URL     string `json:"url,omitempty"`
	Method  string `json:"method,omitempty"`
}

// ChangesAnchor is the fragment of a harness page's Changes view.
const ChangesAnchor = "#changes"

// isLink reports whether a is an action link.
func (a Action) isLink() bool { return a.Method == http.MethodPost && a.URL != "" }

// titles say what happened, by event.
var titles = map[string]string{
	config.NotifyWaiting:     "is waiting for you",
	config.NotifyLimited:     "hit a usage limit",
	config.NotifyFailed:      "failed",
	config.NotifyDegraded:    "is crash-looping",
	config.NotifyRecovered:   "recovered",
	config.NotifyJobFailed:   "job failed",
	config.NotifyHeld:        "is held",
	config.NotifyTurnDone:    "finished a turn",
	config.NotifyToolChanged: "has a tool that changed; held until approved",
}

// shellQuote quotes s for a POSIX shell when it needs it, so an action
// can be pasted as it is shown.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '/' || r == '.' || r == ':' || r == '=' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// actions are the ways to act on an occurrence of event for harness. A
// waiting agent's are an answer per choice: "answer" for the suggested
// one (first), "answer N" for the N-th of the others; a guess would be
// no better than the first choice, which may end the session (Claude
// Code's trust dialog: "No, exit").
func actions(event, harness string, choices []string, suggested, dashboard string) []Action {
	h := shellQuote(harness)
	var out []Action
	switch event {
	case config.NotifyWaiting:
		answer := func(c string) string { return "harness answer " + h + " " + shellQuote(c) }
		switch {
		case len(choices) == 0:
			out = append(out, Action{Label: "answer", Command: answer("…")})
		case suggested != "":
			out = append(out, Action{Label: "answer", Command: answer(suggested)})
		}
		for i, c := range choices {
			if c != suggested {
				out = append(out, Action{Label: fmt.Sprintf("answer %d", i+1), Command: answer(c)})
			}
		}
		out = append(out, Action{Label: "attach", Command: "harness attach " + h})
	case config.NotifyLimited, config.NotifyHeld:
		out = append(out, Action{Label: "describe", Command: "harness describe " + h},
			Action{Label: "start anyway", Command: "harness start " + h + " --force"})
	case config.NotifyFailed, config.NotifyDegraded:
		out = append(out, Action{Label: "logs", Command: "harness logs " + h + " --lines 50"},
			Action{Label: "restart", Command: "harness restart " + h})
	case config.NotifyJobFailed:
		out = append(out, Action{Label: "logs", Command: "harness logs " + h + " --lines 50"},
			Action{Label: "run again", Command: "harness trigger " + h})
	case config.NotifyRecovered:
		out = append(out, Action{Label: "logs", Command: "harness logs " + h})
	case config.NotifyTurnDone:
		out = append(out, Action{Label: "diff", Command: "harness diff " + h},
			Action{Label: "review", Command: "harness review " + h + " --comment 'path:line: text'"})
		if dashboard != "" {
			// The harness page's Changes view.
			return append(out, Action{Label: "changes", URL: dashboard + ChangesAnchor})
		}
	case config.NotifyToolChanged:
		// The unit is mcp.KEY or PROJECT/mcp.KEY; the CLI names it KEY or PROJECT/KEY.
		k := shellQuote(strings.Replace(harness, "mcp.", "", 1))
		out = append(out, Action{Label: "diff", Command: "harness mcp pins " + k + " --diff"},
			Action{Label: "approve", Command: "harness mcp approve " + k})
	}
	if dashboard != "" {
		out = append(out, Action{Label: "dashboard", URL: dashboard})
	}
	return out
}

// Text is the message as plain lines: the title, why, the prompt and its
// choices or the last lines, and how to act.
func (m *Message) Text() string {
	body, links, acts := m.parts(nil)
	return body + links + acts
}

// parts are the message's text in three: what happened (body), its
// action links but those skip keeps out, and the other actions.
func (m *Message) parts(skip map[string]bool) (body, links, acts string) {
	var b strings.Builder
	b.WriteString(m.Reason)
	if m.Prompt != "" {
		fmt.Fprintf(&b, "\n\n%s", m.Prompt)
		for i, c := range m.Choices {
			fmt.Fprintf(&b, "\n  %d. %s", i+1, c)
			if c == m.Suggested {
				b.WriteString(" (suggested)")
			}
		}
	}
	if m.Until != nil {
		fmt.Fprintf(&b, "\nuntil %s", m.Until.Format(time.RFC3339))
	}
	if len(m.LastLines) > 0 {
		b.WriteString("\n\nlast lines:")
		for _, l := range m.LastLines {
			b.WriteString("\n  " + l)
		}
	}
	var l, a strings.Builder
	for _, x := range m.Actions {
		switch {
		case x.isLink():
			if skip[x.URL] {
				continue
			}
			if l.Len() == 0 {
				l.WriteString("\n\nanswer from here (once):")
			}
			fmt.Fprintf(&l, "\n%s: %s", x.Label, x.URL)
		case x.Command != "":
			fmt.Fprintf(&a, "\n%s: %s", x.Label, x.Command)
		default:
			fmt.Fprintf(&a, "\n%s: %s", x.Label, x.URL)
		}
	}
	acts = a.String()
	if acts != "" {
		acts = "\n" + acts
	}
	return b.String(), l.String(), acts
}

// fitText is the text of m within n bytes, the action links kept whole:
// what is cut is the body (a long prompt, last lines), then the other
// actions.
func (m *Message) fitText(n int) string {
	body, links, acts := m.parts(nil)
	if room := n - len(links) - len(acts); room >= 200 {
		return clip(body, room) + links + acts
	}
	if room := n - len(links); room >= 200 {
		return clip(body+acts, room) + links
	}
	return clip(body+links+acts, n)
}

// Bounds of the chat formats' text fields.
const (
	discordMax = 2000
	slackMax   = 3000
)

// ntfyMaxActions is how many action buttons ntfy shows.
const ntfyMaxActions = 3

// Render is the request body, content type and extra headers of m in format.
func Render(format string, m *Message) (body []byte, contentType string, header http.Header, err error) {
	header = http.Header{}
	switch format {
	case config.FormatSlack:
		// Slack's mrkdwn takes &, < and > as markup.
		esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
		title := "*" + esc.Replace(m.Title) + "*\n"
		text := title + esc.Replace(m.fitText(slackMax))
		body, err = json.Marshal(map[string]any{"text": text, "mrkdwn": true})
		return body, "application/json", header, err
	case config.FormatDiscord:
		title := "**" + m.Title + "**\n"
		// No @everyone or role pings from text an agent printed.
		body, err = json.Marshal(map[string]any{"content": title + m.fitText(discordMax-len(title)),
			"allowed_mentions": map[string]any{"parse": []string{}}})
		return body, "application/json", header, err
	case config.FormatNtfy:
		header.Set("Title", headerText(m.Title))
		header.Set("Tags", m.Event)
		header.Set("Priority", strconv.Itoa(ntfyPriority(m.Event)))
		for _, a := range m.Actions {
			if a.URL != "" && !a.isLink() {
				header.Set("Click", a.URL)
			}
		}
		buttons := ntfyButtons(m.Actions)
		shown := map[string]bool{}
		var acts []string
		for _, a := range buttons {
			shown[a.URL] = true
			acts = append(acts, "http, "+ntfyLabel(a.Label)+", "+a.URL+", method=POST, clear=true")
		}
		if len(acts) > 0 {
			header.Set("Actions", headerText(strings.Join(acts, "; ")))
		}
		b, l, a := m.parts(shown)
		return []byte(b + l + a), "text/plain; charset=utf-8", header, nil
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		err = enc.Encode(m)
		return buf.Bytes(), "application/json", header, err
	}
}

// ntfyButtons are the action links that go as ntfy's buttons, at most
// ntfyMaxActions: with more choices, the first two (the agent's ways to
// go on come first) and the last (its way to refuse); the text lists the
// others.
func ntfyButtons(actions []Action) []Action {
	var links []Action
	for _, a := range actions {
		if a.isLink() {
			links = append(links, a)
		}
	}
	if len(links) <= ntfyMaxActions {
		return links
	}
	return append(links[:ntfyMaxActions-1:ntfyMaxActions-1], links[len(links)-1])
}

// ntfyLabel makes a choice a label of ntfy's Actions header, whose
// fields are separated by "," and actions by ";".
func ntfyLabel(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '"' || r == '\'' }), " ")
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		s = "answer"
	}
	return clip(s, 40)
}

// ntfyPriority: what needs a person now is high (4), the rest default (3).
func ntfyPriority(event string) int {
	switch event {
	case config.NotifyWaiting, config.NotifyFailed, config.NotifyJobFailed:
		return 4
	}
	return 3
}

// headerText makes s a valid one-line header value; non-ASCII goes as an
// RFC 2047 word, which ntfy decodes.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	for _, r := range s {
		if r >= utf8.RuneSelf {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
