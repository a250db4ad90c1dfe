package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/errcode"
)

// fakeRemotes are two hosts: box (a write key) with a waiting agent,
// ro (a read key) down with its last rows.
type fakeRemotes struct {
	read  time.Time
	mu    sync.Mutex
	calls []string
}

func (f *fakeRemotes) Fleets() []RemoteFleet {
	units := json.RawMessage(`[{"name":"agent","state":"running","agent":"claude","agent_state":"waiting","prompt":"Allow edit?","choices":["Yes","No"]},{"name":"idle","state":"stopped"}]`)
	return []RemoteFleet{
		{Name: "box", Addr: "ssh://me@box", Units: units, Read: f.read, Bridged: true, Grant: []string{"read", "write", "input"}},
		{Name: "ro", Addr: "ssh://me@ro", Units: units, Read: f.read, Bridged: true, Grant: []string{"read"}, Err: "lost the connection"},
	}
}

func (f *fakeRemotes) Call(_ context.Context, c api.Caller, host, op string, args, result any) error {
	if c.Door != api.DoorPage && c.Door != api.DoorDevice {
		return errcode.Errorf(errcode.Internal, "caller %+v is not the page's", c)
	}
	b, _ := json.Marshal(args)
	f.mu.Lock()
	f.calls = append(f.calls, host+" "+op+" "+string(b))
	f.mu.Unlock()
	read := op == api.OpScreen || op == api.OpTurns || op == api.OpDiff
	if host == "ro" && read {
		return fmt.Errorf("host ro is not reachable now (lost the connection): %w", errcode.ErrDaemonUnavailable)
	}
	if host == "ro" {
		return errcode.Errorf(errcode.NotPermitted, "host ro: operation %s is write: needs write; this SSH key's bridge grants read", op)
	}
	if answer, ok := remoteAnswers[op]; ok && result != nil {
		return json.Unmarshal([]byte(answer), result)
	}
	return nil
}

// remoteAnswers are box's answers to a remote row's page, each with
// markup an agent could have written, which the page must show as text.
var remoteAnswers = map[string]string{
	api.OpScreen: `{"name":"agent","run_id":4,"cols":80,"rows":3,"activity":"idle","lines":["$ make <script>alert(1)</script>","ok box-screen-line",""]}`,
	api.OpTurns:  `{"name":"agent","run_id":4,"agent":"claude","model":"m1","turns":[{"role":"user","text":"fix the <b>build</b>"},{"role":"assistant","text":"box-turn-answer done"}]}`,
	api.OpDiff:   `{"base":"a","head":"b","base_ref":"main","files":[{"path":"x<y>.go","status":"modified","added":1,"deleted":0,"hunks":[{"old_start":1,"old_lines":1,"new_start":1,"new_lines":2,"lines":[" package x","+// box-diff-line <i>"]}]}]}`,
}

// TestScenario_OtherHostsFleetsShowBesideTheLocalOneAndActThere: the
// fleet lists each host's rows in its own section, a waiting agent with
// its choices; a down host says why and how old its rows are; what a
// host's key may not do is disabled; an action on a remote row goes to
// that host, and its refusal comes back as it said it; a read-only
// session may not act on any host.
func TestScenario_OtherHostsFleetsShowBesideTheLocalOneAndActThere(t *testing.T) {
	rem := &fakeRemotes{}
	r := newRigWith(t, func(o *Options) { o.Remotes = rem })
	rem.read = r.clock().Add(-3 * time.Minute)
	c := r.client()
	r.signIn(c, operatorToken)
	st, body, csrf := r.page(c, "/")
	if st != http.StatusOK {
		t.Fatalf("GET / = %d", st)
	}
	box, ro := sectionOf(body, "box"), sectionOf(body, "ro")
	if !strings.Contains(box, `data-host="box" data-name="agent"`) || !strings.Contains(box, `action="/host/box/h/agent/answer"`) || strings.Contains(box, "disabled") {
		t.Fatalf("box's section:\n%s", box)
	}
	if !strings.Contains(ro, "lost the connection · the rows below are 3m old") || !strings.Contains(ro, `data-act="start" disabled`) || !strings.Contains(ro, `data-choice="Yes" disabled`) {
		t.Fatalf("ro's section:\n%s", ro)
	}
	if !strings.Contains(body, "(3) Fleet") {
		t.Fatal("the title does not count the hosts' waiting agents")
	}
	// The live part the page fetches after an event has the hosts too
	// (it is not the one rendering shared by every page).
	if _, live, _ := r.page(c, "/?fragment=1"); !strings.Contains(sectionOf(live, "box"), `action="/host/box/h/agent/answer"`) {
		t.Fatalf("the live part lacks box's section:\n%s", live)
	}
	hdr := map[string]string{"X-CSRF-Token": csrf}
	if st, b := r.post(c, "/host/box/h/agent/answer", url.Values{"choice": {"Yes"}}, hdr); st != http.StatusOK || !strings.Contains(b, `"ok":true`) {
		t.Fatalf("answer on box = %d %s", st, b)
	}
	if st, b := r.post(c, "/host/ro/h/idle/start", url.Values{}, hdr); st != http.StatusForbidden || !strings.Contains(b, "bridge grants read") {
		t.Fatalf("start on ro = %d %s", st, b)
	}
	if st, _ := r.post(c, "/host/box/h/agent/send", url.Values{}, hdr); st != http.StatusNotFound {
		t.Fatalf("send on a remote row = %d, want 404", st)
	}
	if st, _ := r.post(c, "/host/box/h/agent/start", url.Values{}, nil); st != http.StatusForbidden {
		t.Fatalf("a remote action without CSRF = %d", st)
	}
	rem.mu.Lock()
	calls := strings.Join(rem.calls, "\n")
	rem.mu.Unlock()
	if !strings.Contains(calls, `box answer {"choice":"Yes","name":"agent"}`) || !strings.Contains(calls, `ro start {"name":"idle"}`) || strings.Contains(calls, "send") {
		t.Fatalf("calls to the hosts:\n%s", calls)
	}
	if r.b.called("answer") || r.b.called("start") {
		t.Fatal("a remote action reached the local daemon")
	}

	// A read-only session: every host's buttons disabled, and refused.
	tok, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rc := r.client()
	r.signIn(rc, tok)
	_, body, csrf = r.page(rc, "/")
	if box := sectionOf(body, "box"); !strings.Contains(box, `data-choice="Yes" disabled`) || !strings.Contains(box, `data-act="stop" disabled`) {
		t.Fatalf("box's section for a read session:\n%s", box)
	}
	if st, _ := r.post(rc, "/host/box/h/agent/answer", url.Values{"choice": {"Yes"}}, map[string]string{"X-CSRF-Token": csrf}); st != http.StatusForbidden {
		t.Fatalf("answer on box from a read session = %d", st)
	}
}

func sectionOf(body, host string) string {
	i := strings.Index(body, `<section class="hostgroup" data-host="`+host+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, "</section>"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
