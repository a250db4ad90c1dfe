package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait on an event, so a missing event fails the test
// instead of hanging it.
const waitFor = 10 * time.Second

type upCall struct {
	project, name, args string
	token               any
}

// fakeUps serves tools per project, classed like the broker does without
// overrides (readOnlyHint true: read, else write); its Call asks permit,
// reports progress once and answers with the arguments it got.
type fakeUps struct {
	mu    sync.Mutex
	tools map[string][]*mcp.Tool
	calls []upCall
	err   error
}

func (u *fakeUps) Tools(project string) []broker.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []broker.Tool
	for _, t := range u.tools[project] {
		key, _, _ := cutNS(t.Name)
		out = append(out, broker.Tool{Tool: t, Key: key, Class: hintClass(t)})
	}
	return out
}

func hintClass(t *mcp.Tool) api.Class {
	if t.Annotations != nil && t.Annotations.ReadOnlyHint {
		return api.Read
	}
	return api.Write
}

// roHint is the annotation that makes an upstream tool read.
var roHint = &mcp.ToolAnnotations{ReadOnlyHint: true}

func (u *fakeUps) class(project, name string) api.Class {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range u.tools[project] {
		if t.Name == name {
			return hintClass(t)
		}
	}
	return ""
}

func (u *fakeUps) WaitStarting(context.Context, string) {}

func (u *fakeUps) Known(project, name string) (bool, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ns, tool := false, false
	for _, t := range u.tools[project] {
		key, _, _ := cutNS(t.Name)
		if k, _, _ := cutNS(name); k == key {
			ns = true
			if t.Name == name {
				tool = true
			}
		}
	}
	return ns, tool
}

func cutNS(name string) (string, string, bool) {
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '_' && name[i+1] == '_' {
			return name[:i], name[i+2:], true
		}
	}
	return name, "", false
}

func (u *fakeUps) Call(ctx context.Context, project, name string, args json.RawMessage, permit broker.Permit, token any,
	notify func(context.Context, *mcp.ProgressNotificationParams) error) (*mcp.CallToolResult, error) {
	if err := permit(u.class(project, name)); err != nil {
		return nil, err
	}
	// Like the broker, Call tells an unknown tool of a known namespace.
	if _, known := u.Known(project, name); !known {
		return nil, fmt.Errorf("fake upstream: tool %q: %w", name, errcode.ErrUnknownTool)
	}
	u.mu.Lock()
	u.calls = append(u.calls, upCall{project, name, string(args), token})
	err := u.err
	u.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if token != nil {
		if err := notify(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2, Message: "halfway"}); err != nil {
			return nil, fmt.Errorf("fake upstream: progress: %w", err)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream says " + string(args)}}}, nil
}

type fakePrompts struct {
	mu      sync.Mutex
	prompts []*mcp.Prompt
}

func (p *fakePrompts) Prompts() []*mcp.Prompt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.prompts)
}

func (p *fakePrompts) Get(name string, args map[string]string) (*mcp.GetPromptResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.prompts {
		if pr.Name == name {
			return &mcp.GetPromptResult{Description: pr.Description, Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "review " + args["target"]}},
			}}, nil
		}
	}
	return nil, errcode.Errorf(errcode.InvalidArgument, "prompt %q", name)
}

func (p *fakePrompts) set(ps ...*mcp.Prompt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prompts = ps
}

// env is one Manager with its fakes.
type env struct {
	ops     *mcptest.Ops
	auth    *mcptest.Auth
	ups     *fakeUps
	prompts *fakePrompts
	m       *Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{ops: mcptest.NewOps(), auth: mcptest.NewAuth(), ups: &fakeUps{tools: map[string][]*mcp.Tool{}}, prompts: &fakePrompts{}}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.m = NewManager(e.ops, e.auth, e.ups, func() Prompts { return e.prompts }, logger, "test")
	t.Cleanup(e.m.Close)
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// notes collects list_changed and progress notifications seen by a client.
type notes struct {
	tools, prompts chan struct{}
	progress       chan *mcp.ProgressNotificationParams
}

// connect serves one session over a unix socket pair, as the daemon
// serves one, and connects a go-sdk client.
func (e *env) connect(t *testing.T, id Identity) (*mcp.ClientSession, *notes) {
	t.Helper()
	n := &notes{tools: make(chan struct{}, 16), prompts: make(chan struct{}, 16), progress: make(chan *mcp.ProgressNotificationParams, 16)}
	server, client := fdtest.SocketPair(t)
	served := make(chan error, 1)
	go func() { served <- e.m.Serve(context.Background(), server, id) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { n.tools <- struct{}{} },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { n.prompts <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { n.progress <- r.Params },
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: client, Writer: client}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		// The client closes the socket as its reader and as its writer.
		if err := cs.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Logf("client close: %v", err)
		}
		select {
		case err := <-served:
			if err != nil && err != ErrClosed {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("Serve did not return after the client closed")
		}
	})
	return cs, n
}

func call(t *testing.T, cs *mcp.ClientSession, name, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", name, err)
	}
	return res
}

// errCode returns the code of an isError result and checks its text agrees.
func errCode(t *testing.T, res *mcp.CallToolResult) errcode.Code {
	t.Helper()
	if !res.IsError {
		t.Fatalf("expected isError, got %s", text(t, res))
	}
	var body errcode.Body
	if err := json.Unmarshal([]byte(text(t, res)), &body); err != nil {
		t.Fatalf("error text is not a body: %v", err)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["code"] != string(body.Code) || sc["message"] != body.Message {
		t.Fatalf("structuredContent %v does not match text %+v", res.StructuredContent, body)
	}
	return body.Code
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

var (
	readTools = mcptest.FacadeTools(api.Read)
	allTools  = mcptest.FacadeTools(api.Read, api.Write)
)
