package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/dashtoken"
)

// TestScenario_ARemoteRowHasAPageOfItsOwn: a remote row's name links to
// its page, which shows the host's screen, turns and changes, everything
// an agent wrote there escaped; a host that is not connected answers
// each section with why, and its disabled buttons say what its key
// grants; a read-only session's buttons are disabled; an unknown host is
// 404; a session without read is refused before any host is asked.
func TestScenario_ARemoteRowHasAPageOfItsOwn(t *testing.T) {
	rem := &fakeRemotes{}
	r := newRigWith(t, func(o *Options) { o.Remotes = rem })
	rem.read = r.clock().Add(-3 * time.Minute)
	c := r.client()
	r.signIn(c, operatorToken)
	if _, body, _ := r.page(c, "/"); !strings.Contains(sectionOf(body, "box"), `<a href="/host/box/h/agent">agent</a>`) {
		t.Fatalf("box's row does not link to its page:\n%s", sectionOf(body, "box"))
	}

	st, body, _ := r.page(c, "/host/box/h/agent")
	if st != http.StatusOK {
		t.Fatalf("GET /host/box/h/agent = %d\n%s", st, body)
	}
	for _, want := range []string{
		"$ make &lt;script&gt;alert(1)&lt;/script&gt;\nok box-screen-line</pre>", // the screen, trailing blank line cut
		"fix the &lt;b&gt;build&lt;/b&gt;", "box-turn-answer done",               // the turns
		"x&lt;y&gt;.go", "// box-diff-line &lt;i&gt;", // the changes
		"Allow edit?", `action="/host/box/h/agent/answer"`, `data-choice="Yes">`, // its prompt, answerable
		`action="/host/box/h/agent/stop"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("box's agent page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>build") || strings.Contains(body, "<i>") {
		t.Errorf("box's agent page carries the host's markup unescaped:\n%s", body)
	}
	if strings.Contains(body, "/h/agent?fragment") || strings.Contains(body, `id="review"`) {
		t.Error("a remote page carries the local page's live parts or review form")
	}

	st, body, _ = r.page(c, "/host/ro/h/agent")
	if st != http.StatusOK || strings.Count(body, "host ro is not reachable now (lost the connection)") != 3 ||
		!strings.Contains(body, `data-choice="Yes" disabled title="answering needs input; this host's key grants read"`) ||
		!strings.Contains(body, "the row below is 3m old") {
		t.Fatalf("ro's agent page = %d:\n%s", st, body)
	}
	if st, _, _ := r.page(c, "/host/nope/h/agent"); st != http.StatusNotFound {
		t.Fatalf("an unknown host's page = %d", st)
	}
	rem.mu.Lock()
	calls := strings.Join(rem.calls, "\n")
	rem.mu.Unlock()
	for _, want := range []string{`box screen {"name":"agent"`, `box turns {"name":"agent"`, `box diff {"name":"agent"`} {
		if !strings.Contains(calls, want) {
			t.Errorf("box was not asked %s:\n%s", want, calls)
		}
	}
	if r.b.called("screen") || r.b.called("turns") || r.b.called("diff") {
		t.Fatal("a remote page asked the local daemon")
	}

	tok, _, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rc := r.client()
	r.signIn(rc, tok)
	if _, body, _ := r.page(rc, "/host/box/h/agent"); !strings.Contains(body, `data-choice="Yes" disabled`) || !strings.Contains(body, `data-act="stop" disabled`) || !strings.Contains(body, "box-screen-line") {
		t.Fatalf("box's agent page for a read session:\n%s", body)
	}
}
