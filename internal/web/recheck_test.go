package web

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/dashtoken"
	"github.com/harness-dev/harness/internal/fleettest"
)

// sseClient is an open event stream of a page, read line by line.
type sseClient struct {
	lines chan string   // every line the stream sent
	done  chan struct{} // closed when the stream ended
}

// openEvents opens c's event stream and waits for its first comment (it
// is subscribed then); it is closed when the test ends.
func (r *rig) openEvents(c *http.Client) *sseClient {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.ts.URL+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		r.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		r.t.Fatalf("GET /events = %d", resp.StatusCode)
	}
	sc := &sseClient{lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(sc.done)
		defer resp.Body.Close()
		s := bufio.NewScanner(resp.Body)
		for s.Scan() {
			select {
			case sc.lines <- s.Text():
			default: // a test that stopped reading loses lines, not the stream
			}
		}
	}()
	r.t.Cleanup(func() { cancel(); <-sc.done })
	if !sc.waitLine(5*time.Second, "signed in as") {
		r.t.Fatal("the event stream sent no greeting")
	}
	return sc
}

// waitLine reports whether a line containing want arrives within d.
func (sc *sseClient) waitLine(d time.Duration, want string) bool {
	deadline := time.After(d)
	for {
		select {
		case l := <-sc.lines:
			if strings.Contains(l, want) {
				return true
			}
		case <-sc.done:
			// Lines sent before the end are still buffered.
			for {
				select {
				case l := <-sc.lines:
					if strings.Contains(l, want) {
						return true
					}
				default:
					return false
				}
			}
		case <-deadline:
			return false
		}
	}
}

// ended reports whether the stream ends within d, after a signedout event.
func (sc *sseClient) ended(d time.Duration) bool {
	if !sc.waitLine(d, "event: signedout") {
		return false
	}
	select {
	case <-sc.done:
		return true
	case <-time.After(d):
		return false
	}
}

// terminalAs opens name's terminal as c, read up to its attached notice.
func (r *rig) terminalAs(c *http.Client, name string) *websocket.Conn {
	r.t.Helper()
	_, _, csrf := r.page(c, "/h/"+name)
	ws := r.dialAttach(c, name, csrf)
	r.t.Cleanup(func() { ws.CloseNow() })
	readNotice(r.t, ws, api.AttachAttached)
	return ws
}

// closedWithin reports the close status of ws if it closes within d, and
// whether it did.
func closedWithin(ws *websocket.Conn, d time.Duration) (websocket.StatusCode, string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return 0, "", false
		}
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Reason, true
		}
		return websocket.CloseStatus(err), err.Error(), true
	}
}

// TestScenario_AReloadThatTakesATailnetLoginsGrantEndsItsStreamsWithinASecond:
// a reload that narrows ann's grant to read ends her typing terminal
// within a second, her event stream staying open; one that removes her
// login ends her event stream within a second too; cat's read-only
// terminal and stream stay open throughout; the daemon's log says whose
// stream ended and why. The periodic recheck is an hour here: the reload
// alone does it.
func TestScenario_AReloadThatTakesATailnetLoginsGrantEndsItsStreamsWithinASecond(t *testing.T) {
	old := streamRecheck
	streamRecheck = time.Hour
	defer func() { streamRecheck = old }()
	users := newLoginTable()
	logs := &fleettest.SyncBuffer{} // the dashboard writes it while the test reads
	r := tailnetRigWith(t, users, slog.New(slog.NewTextHandler(logs, nil)))
	r.b.mu.Lock()
	r.b.fresh = true
	r.b.mu.Unlock()
	ann, cat := r.as("ann@example.com"), r.as("cat@example.com")
	annEvents, catEvents := r.openEvents(ann), r.openEvents(cat)
	annTerm := r.terminalAs(ann, "w")
	catTerm := r.terminalAs(cat, "w")
	as, _ := r.b.attached()
	if as[0].ReadOnly || !as[1].ReadOnly {
		t.Fatalf("attach args = %+v, want ann typing and cat read-only", as)
	}

	users.set("ann@example.com", []string{"read"})
	start := time.Now()
	r.b.events <- api.Event{Kind: api.EventReload, Time: time.Now()}
	code, reason, closed := closedWithin(annTerm, time.Second)
	if !closed || code != websocket.StatusPolicyViolation || !strings.Contains(reason, "no longer includes input") {
		t.Fatalf("ann's typing terminal after a reload took input: closed=%v %v %q after %v", closed, code, reason, time.Since(start))
	}
	t.Logf("ann's terminal closed %v after the reload", time.Since(start))
	// Her event stream needs only read: it stays, and carries the next event.
	r.b.events <- api.Event{Kind: api.EventState, Unit: "w", State: "stopped"}
	if !annEvents.waitLine(5*time.Second, `"state":"stopped"`) {
		t.Fatalf("ann's event stream ended when her grant kept read\n%s", logs)
	}

	users.set("ann@example.com", nil)
	start = time.Now()
	r.b.events <- api.Event{Kind: api.EventReload, Time: time.Now()}
	if !annEvents.ended(time.Second) {
		t.Fatalf("ann's event stream is open %v after a reload removed her login", time.Since(start))
	}
	t.Logf("ann's event stream ended %v after the reload", time.Since(start))

	// cat was never touched: her terminal and stream carry what follows.
	r.b.mu.Lock()
	v := r.b.viewers[1]
	r.b.mu.Unlock()
	v.out <- []byte("still here")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, data, err := catTerm.Read(ctx); err != nil || string(data) != "still here" {
		t.Fatalf("cat's terminal after the reloads: %q, %v", data, err)
	}
	r.b.events <- api.Event{Kind: api.EventState, Unit: "w", State: "running"}
	if !catEvents.waitLine(5*time.Second, `"state":"running"`) {
		t.Fatal("cat's event stream ended")
	}

	got := logs.String()
	for _, want := range []string{
		`msg="dashboard stream ended: its grant no longer lets it stay open" component=web session="tailnet ann@example.com" path=/h/w/attach reason="the grant of tailnet ann@example.com no longer includes input" cause=reload`,
		`session="tailnet ann@example.com" path=/events reason="signed out: tailnet ann@example.com is signed out or has no grant here now" cause=reload`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %s\n%s", want, got)
		}
	}
	if strings.Contains(got, `session="tailnet cat@example.com" path=`) {
		t.Errorf("the log ends a stream of cat's:\n%s", got)
	}
}

// TestScenario_ARevokedDashboardTokensStreamsEndWithoutAReload: `harness
// mcp token --revoke` writes a file the daemon does not watch; the
// periodic recheck ends the token's open event stream and terminal all
// the same, idle as they are.
func TestScenario_ARevokedDashboardTokensStreamsEndWithoutAReload(t *testing.T) {
	old := streamRecheck
	streamRecheck = 50 * time.Millisecond
	defer func() { streamRecheck = old }()
	r := newRig(t)
	tok, meta, err := dashtoken.Mint(r.state, []string{"read"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := r.client()
	if st := r.signIn(c, tok); st != http.StatusSeeOther {
		t.Fatalf("sign in = %d", st)
	}
	events := r.openEvents(c)
	term := r.terminalAs(c, "w")
	if _, err := dashtoken.Revoke(r.state, meta.ID); err != nil {
		t.Fatal(err)
	}
	if !events.ended(time.Second) {
		t.Fatal("a revoked token's event stream is still open after a second")
	}
	if code, reason, closed := closedWithin(term, time.Second); !closed || code != websocket.StatusPolicyViolation || !strings.Contains(reason, "signed out") {
		t.Fatalf("a revoked token's terminal: closed=%v %v %q", closed, code, reason)
	}
}
