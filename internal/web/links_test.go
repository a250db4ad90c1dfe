package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/actionlink"
	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// linkBackend is an agent of harness "app", run 3, waiting on prompt 7;
// its answers are refused busy while busy is set.
type linkBackend struct {
	mu      sync.Mutex
	busy    bool
	answers []api.AnswerArgs
}

func (b *linkBackend) Call(_ context.Context, c api.Caller, op string, args json.RawMessage) (any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch op {
	case api.OpDescribe:
		return map[string]any{"name": "app", "state": "running", "agent": "claude-code", "agent_state": "waiting",
			"prompt": "touch f", "choices": []string{"Yes", "No"}, "prompt_id": 7, "current_run": map[string]any{"id": 3}}, nil
	case api.OpAnswer:
		if c.Door != api.DoorLink || c.Actor != "link" {
			return nil, errcode.Errorf(errcode.Internal, "answer from %+v, not an action link", c)
		}
		if b.busy {
			return nil, errcode.ErrBusy.Errorf("app: the dialog's cursor is not on any choice yet")
		}
		var a api.AnswerArgs
		_ = json.Unmarshal(args, &a)
		b.answers = append(b.answers, a)
		return api.AnswerResult{Name: "app", RunID: 3, Choice: "Yes", Number: 1,
			After: api.AgentView{Agent: "claude-code", AgentState: api.AgentWorking}}, nil
	}
	return nil, errcode.Errorf(errcode.InvalidArgument, "unknown operation %s", op)
}

func (b *linkBackend) Attach(context.Context, api.Caller, api.AttachArgs) (Viewer, error) {
	return nil, nil
}
func (b *linkBackend) Subscribe() (<-chan api.Event, func()) { return nil, func() {} }
func (b *linkBackend) OperatorGrant() api.Grant              { return api.Grant{} }

// TestScenario_AnActionLinkAnswersItsPromptOnce: with no sign-in, a GET
// shows the prompt and the choice and answers nothing; a POST refused
// busy keeps the link; the next POST answers once, bound to the prompt's
// id, by the choice's number; then that link and its sibling are 410; a
// link of an earlier prompt and an expired one are 410, an unknown 404.
func TestScenario_AnActionLinkAnswersItsPromptOnce(t *testing.T) {
	b := &linkBackend{busy: true}
	now := time.Now()
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	store := actionlink.New(clock)
	srv, err := New(Options{Backend: b, StateDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Links: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	do := func(method, id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+"/a/"+id, nil)
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	prompt := actionlink.Prompt{Harness: "app", RunID: 3, PromptID: 7}
	ids, _ := store.Mint(prompt, "claude-code", "touch f", []string{"Yes", "No"}, time.Minute)
	earlier, _ := store.Mint(actionlink.Prompt{Harness: "app", RunID: 3, PromptID: 6}, "claude-code", "touch f", []string{"Yes"}, time.Minute)

	if st, body := do("GET", ids[0]); st != 200 || !strings.Contains(body, "touch f") || !strings.Contains(body, `id="link-choice">Yes<`) {
		t.Fatalf("GET: %d %s", st, body)
	}
	if st, body := do("POST", ids[0]); st != http.StatusServiceUnavailable || !strings.Contains(body, "busy") {
		t.Fatalf("POST while busy: %d %s", st, body)
	}
	b.mu.Lock()
	b.busy = false
	b.mu.Unlock()
	if st, body := do("POST", ids[0]); st != 200 || !strings.Contains(body, "Answered <strong>Yes</strong>") || !strings.Contains(body, "its agent (claude-code) is working") {
		t.Fatalf("POST: %d %s", st, body)
	}
	b.mu.Lock()
	answers := b.answers
	b.mu.Unlock()
	if len(answers) != 1 || answers[0] != (api.AnswerArgs{Name: "app", Choice: "1", PromptID: 7}) {
		t.Fatalf("answers: %+v", answers)
	}
	for _, id := range ids {
		if st, body := do("POST", id); st != http.StatusGone || !strings.Contains(body, "answered through one of its links already") ||
			!strings.Contains(body, "app is running; its agent (claude-code) is waiting on: touch f.") {
			t.Errorf("POST of a used prompt's link: %d %s", st, body)
		}
	}
	if st, body := do("GET", earlier[0]); st != http.StatusGone || !strings.Contains(body, "no longer on this prompt") {
		t.Errorf("GET of an earlier prompt's link: %d %s", st, body)
	}
	clockMu.Lock()
	now = now.Add(time.Minute)
	clockMu.Unlock()
	if st, body := do("POST", earlier[0]); st != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("POST of an expired link: %d %s", st, body)
	}
	if st, _ := do("GET", "nope"); st != http.StatusNotFound {
		t.Errorf("unknown link: %d", st)
	}
	if st, _ := do("PUT", ids[1]); st != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", st)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.answers) != 1 {
		t.Errorf("answers after the refusals: %+v", b.answers)
	}
}
