package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

func TestSlowCallDoesNotHoldUpAFastOne(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.ops.Block["trigger"] = release
	cs, _ := e.connect(t, Identity{AllowControl: true})

	slow := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_trigger", Arguments: json.RawMessage(`{"name":"job","wait":true}`)})
		if err != nil {
			t.Errorf("trigger: %v", err)
		}
		slow <- res
	}()
	wait(t, e.ops.Started, "the slow call to reach control")

	if res := call(t, cs, "harness_list", `{}`); res.IsError {
		t.Fatalf("fast call: %s", text(t, res))
	}
	select {
	case <-slow:
		t.Fatal("slow call finished before it was released")
	default:
	}
	close(release)
	if res := wait(t, slow, "the slow call"); res == nil || res.IsError {
		t.Fatalf("slow call result %+v", res)
	}
}

func TestUpstreamToolsKeepTheirSchemaAndRoute(t *testing.T) {
	e := newEnv(t)
	raw := `{"type":"object","properties":{"q":{"type":"string","x-vendor":[1,{"deep":true}]}},"required":["q"],"$defs":{"n":{"type":"integer"}}}`
	e.ups.tools[""] = []*mcp.Tool{
		{Name: "gitea__search", Description: "search", InputSchema: json.RawMessage(raw), Annotations: roHint},
		{Name: "gitea__odd", InputSchema: json.RawMessage(`{"type":"string"}`), Annotations: roHint},   // refused by the go-sdk: skipped
		{Name: "harness_fake", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: roHint}, // reserved: skipped
	}
	e.ups.tools["p1"] = []*mcp.Tool{{Name: "jira__issue", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: roHint}}
	e.auth.SetProject("p1-web", "p1")

	cs, n := e.connect(t, Identity{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var found *mcp.Tool
	for _, tool := range res.Tools {
		switch tool.Name {
		case "gitea__search":
			found = tool
		case "gitea__odd", "harness_fake", "jira__issue":
			t.Fatalf("%s should not be listed", tool.Name)
		}
	}
	if found == nil {
		t.Fatal("gitea__search not listed")
	}
	got, _ := json.Marshal(found.InputSchema)
	if !jsonEqual(t, got, []byte(raw)) {
		t.Fatalf("schema changed:\n got %s\nwant %s", got, raw)
	}

	params := &mcp.CallToolParams{Name: "gitea__search", Arguments: json.RawMessage(`{"q":"bug"}`)}
	params.SetProgressToken("tok-1")
	out, err := cs.CallTool(context.Background(), params)
	if err != nil || out.IsError || text(t, out) != `upstream says {"q":"bug"}` {
		t.Fatalf("upstream call: %+v, %v", out, err)
	}
	if p := wait(t, n.progress, "progress"); p.ProgressToken != "tok-1" || p.Progress != 1 {
		t.Fatalf("progress %+v", p)
	}
	if calls := e.ups.calls; len(calls) != 1 || calls[0].project != "" || calls[0].args != `{"q":"bug"}` || calls[0].token != "tok-1" {
		t.Fatalf("upstream calls %+v", calls)
	}

	if code := errCode(t, call(t, cs, "jira__issue", `{}`)); code != errcode.UnknownNamespace {
		t.Fatalf("other project's namespace: %s", code)
	}
	if code := errCode(t, call(t, cs, "gitea__nope", `{}`)); code != errcode.UnknownTool {
		t.Fatalf("unknown tool in known namespace: %s", code)
	}

	e.ups.mu.Lock()
	e.ups.err = errcode.Errorf(errcode.UpstreamUnavailable, "broker: upstream gitea: down, retry in 2s")
	e.ups.mu.Unlock()
	if code := errCode(t, call(t, cs, "gitea__search", `{"q":"x"}`)); code != errcode.UpstreamUnavailable {
		t.Fatalf("down upstream: %s", code)
	}

	// A project harness sees its project's upstreams, not the global ones.
	pcs, _ := e.connect(t, Identity{Harness: "p1-web"})
	names := mcptest.ToolNames(t, pcs)
	if !slices.Contains(names, "jira__issue") || slices.Contains(names, "gitea__search") {
		t.Fatalf("project session tools %v", names)
	}
}

func TestUpstreamChangesReachSessionsOnRefresh(t *testing.T) {
	e := newEnv(t)
	cs, n := e.connect(t, Identity{})
	e.ups.mu.Lock()
	e.ups.tools[""] = []*mcp.Tool{{Name: "demo__echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: roHint}}
	e.ups.mu.Unlock()
	e.m.Refresh()
	wait(t, n.tools, "list_changed after an upstream appeared")
	if !slices.Contains(mcptest.ToolNames(t, cs), "demo__echo") {
		t.Fatal("new upstream tool not listed")
	}
}

func TestNoBrokerMeansUnknownNamespace(t *testing.T) {
	m := NewManager(mcptest.NewOps(), mcptest.NewAuth(), nil, nil, nil, "test")
	t.Cleanup(m.Close)
	e := &env{m: m}
	cs, _ := e.connect(t, Identity{})
	if code := errCode(t, call(t, cs, "gitea__search", `{}`)); code != errcode.UnknownNamespace {
		t.Fatalf("code %s", code)
	}
	if res, err := cs.ListPrompts(context.Background(), nil); err != nil || len(res.Prompts) != 0 {
		t.Fatalf("prompts %+v, %v", res, err)
	}
}

func TestPromptsListedFetchedAndRefreshed(t *testing.T) {
	e := newEnv(t)
	e.prompts.set(&mcp.Prompt{Name: "review", Description: "review a change", Arguments: []*mcp.PromptArgument{{Name: "target", Required: true}}})
	cs, n := e.connect(t, Identity{Harness: "web"})

	lp, err := cs.ListPrompts(context.Background(), nil)
	if err != nil || len(lp.Prompts) != 1 || lp.Prompts[0].Name != "review" {
		t.Fatalf("prompts %+v, %v", lp, err)
	}
	gp, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"target": "PR 7"}})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("get: %+v, %v", gp, err)
	}
	if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "review PR 7" {
		t.Fatalf("message %+v", gp.Messages[0].Content)
	}

	e.prompts.set(&mcp.Prompt{Name: "deploy"})
	e.m.Refresh()
	wait(t, n.prompts, "prompts/list_changed")
	lp, err = cs.ListPrompts(context.Background(), nil)
	if err != nil || len(lp.Prompts) != 1 || lp.Prompts[0].Name != "deploy" {
		t.Fatalf("prompts after refresh %+v, %v", lp, err)
	}

	// A prompt the set no longer has (listed before a reload) is invalid params.
	e.prompts.set()
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "deploy"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("get of a vanished prompt: %v", err)
	}
}

func TestCloseEndsSessionsAndCancelsCalls(t *testing.T) {
	e := newEnv(t)
	e.ops.Block["trigger"] = make(chan struct{}) // never released: only Close ends it
	server, client := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.m.Serve(context.Background(), server, Identity{AllowControl: true}) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: client, Writer: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callErr := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "harness_trigger", Arguments: json.RawMessage(`{"name":"job","wait":true}`)})
		if err == nil && !res.IsError {
			err = errors.New("call succeeded")
		} else {
			err = nil // cancelled: either the stream broke or the result says so
		}
		callErr <- err
	}()
	wait(t, e.ops.Started, "the call to reach control")

	e.m.Close()
	if err := wait(t, served, "Serve to return"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve returned %v, want ErrClosed", err)
	}
	if err := wait(t, callErr, "the in-flight call to end"); err != nil {
		t.Fatalf("in-flight call after Close: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	wait(t, waited, "the client to see the session end")

	// A closed Manager serves nothing.
	s2, c2 := net.Pipe()
	defer c2.Close()
	if err := e.m.Serve(context.Background(), s2, Identity{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestServeEndsWithItsContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	server, client := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.m.Serve(ctx, server, Identity{}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: client, Writer: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := wait(t, served, "Serve to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	wait(t, waited, "the client to see the session end")
}

func TestNewServerFollowsRefresh(t *testing.T) {
	e := newEnv(t)
	srv := e.m.NewServer(Identity{Harness: "web"})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %q", got)
	}
	if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
		t.Fatalf("tools %v", got)
	}
	e.auth.SetAllowed("web", "read", "write")
	e.m.Refresh()
	wait(t, changed, "list_changed on an HTTP-style server")
	if res := call(t, cs, "harness_stop", `{"name":"web"}`); res.IsError {
		t.Fatalf("stop: %s", text(t, res))
	}
	if err := cs.Close(); err != nil {
		t.Logf("client close: %v", err)
	}
	if err := ss.Wait(); err != nil {
		t.Logf("server session: %v", err)
	}
	e.m.Refresh() // drops the ended session's server
	e.m.mu.Lock()
	n := len(e.m.live)
	e.m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d servers still tracked after their session ended", n)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestCloseEndsAHalfClosedSessionWithACallInFlight: a client that sent its
// calls and closed its side keeps the session open until they are answered
// (the transport holds EOF back); Close, or the end of Serve's context,
// must still end it at once and cancel the call, or a daemon shutdown
// would wait on it.
func TestCloseEndsAHalfClosedSessionWithACallInFlight(t *testing.T) {
	for _, how := range []string{"Close", "context"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.ops.Block["trigger"] = make(chan struct{}) // never released
			server, client := fdtest.SocketPair(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- e.m.Serve(ctx, server, Identity{AllowControl: true}) }()
			go func() { _, _ = io.Copy(io.Discard, client) }()
			_, err := io.WriteString(client, strings.Join([]string{
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"harness_trigger","arguments":{"name":"job","wait":true}}}`,
			}, "\n")+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if err := client.(*net.UnixConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			wait(t, e.ops.Started, "the call to reach control")
			want := error(ErrClosed)
			if how == "Close" {
				e.m.Close()
			} else {
				cancel()
				want = context.Canceled
			}
			if err := wait(t, served, "Serve to return"); !errors.Is(err, want) {
				t.Fatalf("Serve returned %v, want %v", err, want)
			}
		})
	}
}
