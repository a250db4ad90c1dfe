package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harness-dev/harness/internal/api"
)

// Part 11: an answer from a notification's action link. A harness that
// draws Claude Code's permission dialog (this program in -serve-agent
// dialog mode) asks to run `touch f-N`, and notes the time it reads the
// answer's Enter; then it shows its prompt and, a moment later, the next
// dialog. Each dialog's `waiting` notification goes to a JSON receiver
// here, with a link per choice (action_links). The time from the POST of
// the Yes link, as a phone's browser makes it, to the agent reading the
// keys is compared with the same answer made over the control socket
// (`harness answer`), in the same run, alternating.

// linkRounds is how many dialogs part 11 answers each way.
func linkRounds(o options) int {
	if o.Harnesses < 200 {
		return 10
	}
	return 30
}

// serveDialog is the -serve-agent dialog FILE mode: a permission dialog,
// an answer's Enter noted in FILE (Unix nanoseconds), its prompt, and
// 300 ms later the next dialog, forever.
func serveDialog(file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	head := "\x1b[H\x1b[2J ▐▛███▜▌   Claude Code v2.1.328\r\n\r\n❯ Make the files\r\n\r\n"
	rule := strings.Repeat("╌", 40)
	in := bufio.NewReader(os.Stdin)
	for n := 1; ; n++ {
		_, _ = fmt.Fprintf(os.Stdout, "%s● Bash(touch f-%d)\r\n%s\r\n Bash command\r\n\r\n%s\r\n touch f-%d\r\n%s\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n\r\n Esc to cancel\r\n",
			head, n, strings.Repeat("─", 40), rule, n, rule)
		if _, err := in.ReadString('\n'); err != nil {
			return nil
		}
		at := time.Now()
		_, _ = os.Stdout.WriteString(head + "────────────────\r\n❯ \r\n────────────────\r\n  ? for shortcuts\r\n")
		fmt.Fprintf(f, "%d\n", at.UnixNano())
		time.Sleep(300 * time.Millisecond)
	}
}

// linkSink keeps the POST links of each waiting message, by prompt.
type linkSink struct {
	mu    sync.Mutex
	links map[string]string // prompt -> the Yes link
	got   chan struct{}
}

func (s *linkSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		Event   string `json:"event"`
		Prompt  string `json:"prompt"`
		Actions []struct {
			Label, URL, Method string
		} `json:"actions"`
	}
	b, _ := io.ReadAll(r.Body)
	if json.Unmarshal(b, &m) != nil || m.Event != "waiting" {
		return
	}
	for _, a := range m.Actions {
		if a.Label == "Yes" && a.Method == http.MethodPost {
			s.mu.Lock()
			s.links[m.Prompt] = a.URL
			s.mu.Unlock()
			select {
			case s.got <- struct{}{}:
			default:
			}
		}
	}
}

// yes waits for the Yes link of the message about prompt.
func (s *linkSink) yes(ctx context.Context, prompt string) (string, error) {
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		link := s.links[prompt]
		s.mu.Unlock()
		if link != "" {
			return link, nil
		}
		select {
		case <-s.got:
		case <-timeout:
			return "", fmt.Errorf("no waiting message with links for %q within 10 s", prompt)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// runLinks is part 11.
func runLinks(ctx context.Context, o options, bin, tmp string, rep *report) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	n := linkRounds(o)
	part := fmt.Sprintf("11 (an answer from an action link, %d each way)", n)
	sink := &linkSink{links: map[string]string{}, got: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sink}
	go srv.Serve(ln)
	defer srv.Close()
	marks := filepath.Join(tmp, "link-answers")
	cfg := fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\n\n[notify.phone]\nurl = \"http://%s/hook\"\non = [\"waiting\"]\naction_links = true\ncooldown_s = 0\n\n"+
		"[harness.a]\ncmd = %q\nargs = [\"-serve-agent\", \"dialog\", %q]\nagent = \"claude-code\"\nmcp_wire = false\nhooks = false\nstop_grace = 1\n",
		ln.Addr(), exe, marks)
	d, err := startDaemon(ctx, o, bin, tmp, "links", cfg)
	if err != nil {
		return err
	}
	defer d.close()
	events, stopEvents, err := d.subscribe(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	if _, err := d.cli(ctx, "start", "a"); err != nil {
		return err
	}
	waiting := func(prompt string) (api.AgentView, error) {
		ev, _, err := awaitEvent(ctx, events, 10*time.Second, func(ev api.Event) bool {
			return ev.Unit == "a" && ev.Kind == api.EventAgent && ev.Agent != nil &&
				ev.Agent.AgentState == api.AgentWaiting && strings.Contains(ev.Agent.Prompt, prompt)
		})
		if err != nil {
			return api.AgentView{}, fmt.Errorf("the dialog for %q never seen waiting: %w", prompt, err)
		}
		return *ev.Agent, nil
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	o.progress("part 11: %d answers from action links, %d over the socket", n, n)
	var sent []time.Time
	var viaLink, viaSocket []int // indexes into sent
	var post []time.Duration
	for i := range 2 * n {
		prompt := fmt.Sprintf("touch f-%d", i+1)
		v, err := waiting(prompt)
		if err != nil {
			return err
		}
		// A person answers a while after the dialog came: the adapter's
		// guard against keys typed into a dialog's first moments
		// (AnswerAfter) is not what is timed.
		time.Sleep(time.Second)
		if i%2 == 0 {
			link, err := sink.yes(ctx, prompt)
			if err != nil {
				return err
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, link, nil)
			req.Header.Set("Accept", "text/html")
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				return fmt.Errorf("POST the Yes link: %w", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST the Yes link: %s", resp.Status)
			}
			post = append(post, time.Since(t0))
			sent, viaLink = append(sent, t0), append(viaLink, i)
		} else {
			t0 := time.Now()
			if err := d.ctl.Call(ctx, api.OpAnswer, api.AnswerArgs{Name: "a", Choice: "Yes", PromptID: v.PromptID}, &api.AnswerResult{}); err != nil {
				return fmt.Errorf("answer: %w", err)
			}
			sent, viaSocket = append(sent, t0), append(viaSocket, i)
		}
	}
	// The last answer's mark is written as it is read: wait for it.
	var got []time.Time
	for deadline := time.Now().Add(10 * time.Second); ; {
		if got, err = readMarks(marks); err != nil {
			return err
		}
		if len(got) >= 2*n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != 2*n {
		return fmt.Errorf("the agent read %d answers, want %d", len(got), 2*n)
	}
	lat := func(idx []int) []time.Duration {
		var out []time.Duration
		for _, i := range idx {
			out = append(out, got[i].Sub(sent[i]))
		}
		return out
	}
	sl, ss, sp := summarize(lat(viaLink)), summarize(lat(viaSocket)), summarize(post)
	if sl.N == 0 || ss.N == 0 {
		return errors.New("part 11 timed nothing")
	}
	rep.metric(part, "`answer` over the socket -> keys read by the agent (baseline) p50 / p99", "%s / %s", us(ss.P50), us(ss.P99))
	rep.metric(part, "action link POST -> keys read by the agent p50 / p99", "%s / %s", us(sl.P50), us(sl.P99))
	rep.metric(part, "action link vs socket, p50 / p99 ratio", "%s / %s", ratio(float64(sl.P50), float64(ss.P50)), ratio(float64(sl.P99), float64(ss.P99)))
	rep.metric(part, "action link POST answered (the page back) p50 / p99", "%s / %s", us(sp.P50), us(sp.P99))
	return nil
}
