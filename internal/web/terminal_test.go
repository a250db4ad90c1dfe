package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harness-dev/harness/internal/api"
)

func (r *rig) dialAttach(c *http.Client, name, csrf string) *websocket.Conn {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(r.ts.URL, "http") + "/h/" + name + "/attach"
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c})
	if err != nil {
		r.t.Fatal(err)
	}
	hello, _ := json.Marshal(attachHello{CSRF: csrf, Cols: 100, Rows: 30})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		r.t.Fatal(err)
	}
	return ws
}

// operatorTerminal signs in as the operator and opens name's terminal,
// read up to its attached notice; closed when the test ends.
func (r *rig) operatorTerminal(name string) *websocket.Conn {
	r.t.Helper()
	c := r.client()
	r.signIn(c, operatorToken)
	_, _, csrf := r.page(c, "/h/"+name)
	ws := r.dialAttach(c, name, csrf)
	r.t.Cleanup(func() { ws.CloseNow() })
	readNotice(r.t, ws, api.AttachAttached)
	return ws
}

func readNotice(t *testing.T, ws *websocket.Conn, kind string) api.AttachEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("reading for a %s notice: %v", kind, err)
		}
		if typ != websocket.MessageText {
			continue
		}
		var ev api.AttachEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == kind {
			return ev
		}
	}
}

func TestScenario_TerminalWriterTypesAndAWrongCSRFIsRefused(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	_, _, csrf := r.page(c, "/h/a")

	bad := r.dialAttach(c, "a", "nope")
	_, _, err := bad.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("attach with a wrong CSRF: %v", err)
	}
	if as, _ := r.b.attached(); len(as) != 0 {
		t.Fatal("a refused attach reached the backend")
	}

	ws := r.dialAttach(c, "a", csrf)
	defer ws.CloseNow()
	readNotice(t, ws, api.AttachAttached)
	as, v := r.b.attached()
	if a := as[0]; a.ReadOnly || a.Masked || a.Cols != 100 || a.Rows != 30 {
		t.Fatalf("attach args = %+v", a)
	}
	ctx := context.Background()
	_ = ws.Write(ctx, websocket.MessageBinary, []byte("hi\r"))
	_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"resize","cols":90,"rows":20}`))
	v.out <- []byte("echo")
	typ, data, err := ws.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || string(data) != "echo" {
		t.Fatalf("output = %v %q %v", typ, data, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for v.typed() != "hi\r" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := v.typed(); got != "hi\r" {
		t.Fatalf("typed %q", got)
	}
	// An oversized frame closes the connection (1009), the daemon unharmed.
	_ = ws.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte("x"), maxFrame+1))
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
				t.Fatalf("oversized frame: %v", err)
			}
			break
		}
	}
}

func TestScenario_EventStreamCarriesEventsAndStopsWithTheServer(t *testing.T) {
	r := newRig(t)
	c := r.client()
	r.signIn(c, operatorToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.ts.URL+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	// The stream is subscribed once its first comment arrives.
	for !strings.Contains(got.String(), "signed in") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(buf[:n])
	}
	r.b.events <- api.Event{Kind: api.EventState, Unit: "a", State: "stopped"}
	for !strings.Contains(got.String(), `"state":"stopped"`) {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(buf[:n])
	}
	if !strings.Contains(got.String(), "event: unit\n") {
		t.Fatalf("stream = %q", got.String())
	}
}

func TestScenario_ATerminalThatNeverReadsIsCutOff(t *testing.T) {
	old := writeTimeout
	writeTimeout = 200 * time.Millisecond
	defer func() { writeTimeout = old }()
	r := newRig(t)
	r.operatorTerminal("a")
	_, v := r.b.attached()
	// The program floods; the browser reads nothing more.
	chunk := bytes.Repeat([]byte("y"), 32<<10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case v.out <- chunk:
			case <-v.closed:
				return
			}
		}
	}()
	select {
	case <-done: // the server gave up on the browser and closed its viewer
	case <-time.After(20 * time.Second):
		t.Fatal("a browser that never reads still holds its viewer")
	}
}
