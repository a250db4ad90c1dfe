package httpmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/demoupstream"
)

// fastSecret is an env_file value: the demo upstream's env tool returns
// it, and the broker masks it in process upstreams' results.
const fastSecret = "s3cr3t-value-0042"

// recorder keeps the call log rows.
type recorder struct {
	mu   sync.Mutex
	recs []api.CallRecord
}

func (r *recorder) Record(c api.CallRecord) { r.mu.Lock(); r.recs = append(r.recs, c); r.mu.Unlock() }
func (r *recorder) KeepArgs() bool          { return true }
func (r *recorder) take() []api.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

// newFastEnv is newEnv with a real broker behind the sessions and one
// process-like upstream "up" (the demo upstream, on OS pipes as a child's
// stdio are), the fast path on or off.
func newFastEnv(t *testing.T, fast bool, opts ...func(*Options, *http.Server)) (*env, *broker.Broker, *recorder) {
	t.Helper()
	t.Setenv("FAST_TEST_SECRET", fastSecret)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b := broker.New(logger, broker.Options{Mask: mask.New(fastSecret).String})
	b.Configure(map[string]broker.Upstream{"up": {Key: "up", MaxResult: 4096}})
	upIn, brokerOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	brokerIn, upOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- demoupstream.Serve(ctx, upIn, upOut, "up") }()
	t.Cleanup(func() {
		b.Close()
		cancel()
		<-served
		upIn.Close()
		upOut.Close()
	})
	b.Serve(context.Background(), api.UpstreamRun{Unit: "up", Run: 1, Link: api.Pipes{Stdin: brokerOut, Stdout: brokerIn}})
	deadline := time.After(waitFor)
	for {
		ch := b.Changed()
		if slices.ContainsFunc(b.Status(), func(s broker.Status) bool { return s.Unit == "up" && s.Connected }) {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("timed out waiting for the upstream to connect")
		}
	}
	e := newEnvWith(t, b, opts...)
	e.sessions.SetFastPath(fast)
	rec := &recorder{}
	e.sessions.SetCallRecorder(rec)
	e.auth.Add("tok-web", "web", "read", "up:write")
	return e, b, rec
}

// fastCalls are the stateless calls of the scenario, and whether the fast
// path takes each (when it is on).
var fastCalls = []struct {
	name, args string
	fast       bool
}{
	{"up__echo", `{"text":"hello"}`, true},
	{"up__echo", `{"text":"a \"quoted\" \\ line\nand <html> & ünïcode"}`, true},
	{"up__env", `{"key":"FAST_TEST_SECRET"}`, true},
	{"up__fail", `{"message":"it broke"}`, true},
	{"up__boom", `{"message":"no such thing"}`, true},
	{"up__big", `{"bytes":8192}`, true},
	{"up__echo", `{"text":"after the big one"}`, true},
	{"up__nosuch", `{}`, false},
	{"nope__echo", `{}`, false},
	{"harness_list", `{}`, false},
}

// TestScenario_AStatelessHTTPCallAnswersAsTheGoSDKPathDoes: the same
// stateless (2026-07-28) calls through the HTTP endpoint with the fast
// path on and off get the same answers and the same call log rows; the
// secret is masked either way, max_result_bytes refuses either way, and
// with the fast path on exactly the calls to listed upstream tools were
// forwarded as bytes.
func TestScenario_AStatelessHTTPCallAnswersAsTheGoSDKPathDoes(t *testing.T) {
	sameAnswersOnBothPaths(t, func(e *env) (*mcp.ClientSession, error) { return e.connectStateless(t, "tok-web") })
}

// sameAnswersOnBothPaths makes fastCalls through sessions connect opens,
// with the fast path on and off, and compares answers and call log rows.
func sameAnswersOnBothPaths(t *testing.T, connect func(*env) (*mcp.ClientSession, error)) {
	t.Helper()
	answers := map[bool][]string{}
	rows := map[bool][]api.CallRecord{}
	for _, fast := range []bool{false, true} {
		e, b, rec := newFastEnv(t, fast)
		cs, err := connect(e)
		if err != nil {
			t.Fatal(err)
		}
		before := b.FastCalls()
		want := 0
		for _, c := range fastCalls {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: json.RawMessage(c.args)})
			cancel()
			if err != nil {
				t.Fatalf("fast=%v %s: %v", fast, c.name, err)
			}
			out, _ := json.Marshal(res)
			if strings.Contains(string(out), fastSecret) {
				t.Errorf("fast=%v %s: the answer carries the secret: %s", fast, c.name, out)
			}
			// The refused answer's size counts its id, which differs.
			answers[fast] = append(answers[fast], answerSize.ReplaceAllString(string(out), "the answer of N bytes"))
			if c.fast && fast {
				want++
			}
		}
		if got := int(b.FastCalls() - before); got != want {
			t.Errorf("fast=%v: %d calls forwarded as bytes, want %d", fast, got, want)
		}
		for _, r := range rec.take() {
			if r.Kind != api.CallTool {
				continue
			}
			r.Time, r.DurationMS = time.Time{}, 0
			rows[fast] = append(rows[fast], r)
		}
	}
	for i, c := range fastCalls {
		if answers[false][i] != answers[true][i] {
			t.Errorf("%s %s: the go-sdk path answered\n%s\nthe fast path\n%s", c.name, c.args, answers[false][i], answers[true][i])
		}
	}
	if !strings.Contains(answers[true][2], "[masked]") || !strings.Contains(answers[true][5], "max_result_bytes") {
		t.Errorf("the secret or the bound did not show: %s / %s", answers[true][2], answers[true][5])
	}
	if len(rows[false]) != len(fastCalls) || len(rows[true]) != len(fastCalls) {
		t.Fatalf("call log rows: %d (go-sdk path) and %d (fast path), want %d each", len(rows[false]), len(rows[true]), len(fastCalls))
	}
	for i := range rows[false] {
		a, _ := json.Marshal(rows[false][i])
		b, _ := json.Marshal(rows[true][i])
		// Each env's shared server names its own session.
		a = sessionField.ReplaceAll(a, []byte(`"session":"S"`))
		b = sessionField.ReplaceAll(b, []byte(`"session":"S"`))
		if string(a) != string(b) {
			t.Errorf("call log row %d: go-sdk path %s, fast path %s", i, a, b)
		}
	}
}

// TestScenario_AStatelessCallTheFastPathCannotServeKeepsTheGoSDKPath: a
// call whose headers do not match its body, one from a client that can
// answer elicitation, and one with a progress token are the go-sdk's: its
// refusal (400) and answers, nothing forwarded as bytes. A call the fast
// path takes is answered as one application/json body.
func TestScenario_AStatelessCallTheFastPathCannotServeKeepsTheGoSDKPath(t *testing.T) {
	e, b, _ := newFastEnv(t, true)
	post := func(hdr map[string]string, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(protocolVersionHeader, protocolStateless)
		req.Header.Set("Mcp-Method", "tools/call")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := httpClient(t, "tok-web").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, string(out)
	}
	call := func(id int, caps, extra string) string {
		meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":` + caps + extra + `}`
		return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"_meta":` + meta + `,"name":"up__echo","arguments":{"text":"hi"}}}`
	}

	before := b.FastCalls()
	resp, body := post(map[string]string{"Mcp-Name": "up__echo"}, call(1, `{}`, ""))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("the fast call: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if b.FastCalls()-before != 1 {
		t.Fatalf("the plain call was not forwarded as bytes")
	}

	before = b.FastCalls()
	resp, body = post(map[string]string{"Mcp-Name": "up__other"}, call(2, `{}`, ""))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Mcp-Name") {
		t.Errorf("a call whose Mcp-Name is not its body's: %d %s, want the go-sdk's 400", resp.StatusCode, body)
	}
	for _, c := range []struct{ what, body string }{
		{"elicitation", call(3, `{"elicitation":{}}`, "")},
		{"sampling", call(4, `{"sampling":{}}`, "")},
		{"a progress token", call(5, `{}`, `,"progressToken":"p1"`)},
		{"a log level", call(6, `{}`, `,"io.modelcontextprotocol/logLevel":"debug"`)},
	} {
		resp, body = post(map[string]string{"Mcp-Name": "up__echo"}, c.body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `\"hi\"`) && !strings.Contains(body, `"text":"hi"`) {
			t.Errorf("a call from a client with %s: %d %s", c.what, resp.StatusCode, body)
		}
		if !bytes.Contains([]byte(resp.Header.Get("Content-Type")), []byte("text/event-stream")) {
			t.Errorf("a call from a client with %s was answered as %s, not by the go-sdk's stream", c.what, resp.Header.Get("Content-Type"))
		}
	}
	if n := b.FastCalls() - before; n != 0 {
		t.Errorf("%d of the calls the go-sdk should serve were forwarded as bytes", n)
	}
}

var (
	sessionField = regexp.MustCompile(`"session":"[^"]*"`)
	answerSize   = regexp.MustCompile(`the answer of \d+ bytes`)
)

// TestScenario_AStatelessFastCallEndsUpstreamWhenItsClientGoesAway: a
// client that gives up on a call it sent over HTTP (its request's context
// ends, and with it the connection) has the call cancelled upstream, as
// the go-sdk path cancels a handler's.
func TestScenario_AStatelessFastCallEndsUpstreamWhenItsClientGoesAway(t *testing.T) {
	e, b, _ := newFastEnv(t, true)
	cs, err := e.connectStateless(t, "tok-web")
	if err != nil {
		t.Fatal(err)
	}
	before := b.FastCalls()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{"ms": 60000}})
		done <- err
	}()
	for deadline := time.Now().Add(waitFor); b.FastCalls() == before; {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the fast path")
		}
		time.Sleep(2 * time.Millisecond) // a counter with no event to wait on
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the abandoned call returned no error")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), waitFor)
	defer wcancel()
	res, err := cs.CallTool(wctx, &mcp.CallToolParams{Name: "up__cancelled", Arguments: map[string]any{"at_least": 1}})
	if err != nil || res.IsError {
		t.Fatalf("the upstream never saw the call cancelled: %+v %v", res, err)
	}
}
