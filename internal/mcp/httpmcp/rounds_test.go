package httpmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// askingUps is one upstream tool, up__ask, that asks its caller a
// question (an elicitation, through the call's back) and answers with
// what it was told.
type askingUps struct{ calls atomic.Int32 }

func (u *askingUps) Tools(string) []broker.Tool {
	return []broker.Tool{{Tool: &mcp.Tool{Name: "up__ask", InputSchema: map[string]any{"type": "object"}}, Key: "up", Class: api.Read}}
}

func (u *askingUps) Known(_, name string) (bool, bool) {
	return strings.HasPrefix(name, "up__"), name == "up__ask"
}

func (u *askingUps) WaitStarting(context.Context, string) {}

func (u *askingUps) Call(ctx context.Context, _, _ string, _ json.RawMessage, permit broker.Permit, _ any,
	_ func(context.Context, *mcp.ProgressNotificationParams) error) (*mcp.CallToolResult, error) {
	if err := permit(api.Read); err != nil {
		return nil, err
	}
	u.calls.Add(1)
	back, ok := broker.BackFrom(ctx)
	if !ok {
		return nil, context.Canceled
	}
	er, err := back.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + er.Content["name"].(string)}}}, nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestScenario_StatelessUpstreamQuestionIsAnInputRequiredRound: during a
// stateless call, the upstream's elicitation is the call's input_required
// result; the client's retry answers it and gets the upstream's result,
// in one upstream call. Another token cannot use the requestState.
func TestScenario_StatelessUpstreamQuestionIsAnInputRequiredRound(t *testing.T) {
	ups := &askingUps{}
	e := newEnvWith(t, ups)
	e.auth.Add("tok-a", "a", "read")
	e.auth.Add("tok-b", "b", "read")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	connect := func(token string, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "rounds", Version: "0"}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: httpClient(t, token), MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	answer := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}

	// The go-sdk client does the rounds by itself.
	auto := connect("tok-a", &mcp.ClientOptions{ElicitationHandler: answer})
	res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask"})
	if err != nil || res.IsError || resultText(res) != "hello Ada" {
		t.Fatalf("automatic rounds: %v %q", err, resultText(res))
	}

	// By hand: the question, someone else's retry, the owner's retry.
	manual := connect("tok-a", &mcp.ClientOptions{ElicitationHandler: answer, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	first, err := manual.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask"})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, first)
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	responses := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}
	other := connect("tok-b", &mcp.ClientOptions{ElicitationHandler: answer, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	stolen, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask", InputResponses: responses, RequestState: first.RequestState})
	if err != nil || !stolen.IsError || !strings.Contains(resultText(stolen), "requestState") {
		t.Fatalf("another token's retry: %v %q", err, resultText(stolen))
	}
	done, err := manual.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask", InputResponses: responses, RequestState: first.RequestState})
	if err != nil || done.IsError || done.NeedsInput() || resultText(done) != "hello Grace" {
		t.Fatalf("the owner's retry: %v %q", err, resultText(done))
	}
	if n := ups.calls.Load(); n != 2 {
		t.Fatalf("upstream calls = %d, want 2 (a retry continues its call)", n)
	}

	// A client without elicitation is told so, as before.
	bare := connect("tok-a", &mcp.ClientOptions{})
	res, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask"})
	if err != nil || !strings.Contains(resultText(res), "does not support elicitation") {
		t.Fatalf("a client without elicitation: %v %q", err, resultText(res))
	}
}

// taskAsker adds a task to every tools/call a go-sdk client sends (it
// cannot ask for one itself).
type taskAsker struct{ base http.RoundTripper }

func (a taskAsker) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Header.Get("Mcp-Method") == "tools/call" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		b = bytes.Replace(b, []byte(`"params":{`), []byte(`"params":{"task":{"ttl":60000},`), 1)
		r = r.Clone(r.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	return a.base.RoundTrip(r)
}

type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId,omitempty"`
}

type taskAnswer struct {
	mcp.ResultBase
	TaskID string `json:"taskId"`
	Status string `json:"status"`
	Tasks  []struct {
		TaskID string `json:"taskId"`
	} `json:"tasks"`
}

// TestScenario_StatelessRequestsSeeTheirCredentialsTasks: a task made by
// one stateless request is the credential's: a later request of the same
// token lists and reads it, another token's does not find it.
func TestScenario_StatelessRequestsSeeTheirCredentialsTasks(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-a", "a", "read", "write")
	e.auth.Add("tok-b", "b", "read", "write")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	connect := func(token string, rt func(http.RoundTripper) http.RoundTripper) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "tasks", Version: "0"}, nil)
		for _, m := range []string{"tasks/get", "tasks/list"} {
			if err := mcp.AddSendingCustomMethod[*taskIDParams, *taskAnswer](c, m); err != nil {
				t.Fatal(err)
			}
		}
		hc := httpClient(t, token)
		hc.Transport = rt(hc.Transport)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	same := func(rt http.RoundTripper) http.RoundTripper { return rt }
	maker := connect("tok-a", func(rt http.RoundTripper) http.RoundTripper { return taskAsker{rt} })
	// The go-sdk client cannot read a CreateTaskResult as a tool result;
	// what matters is the task it made.
	_, _ = maker.CallTool(ctx, &mcp.CallToolParams{Name: "harness_delegate", Arguments: map[string]any{"name": "dev", "prompt": "hi"}})

	reader := connect("tok-a", same)
	list, err := mcp.CallCustomMethod[*taskIDParams, *taskAnswer](ctx, reader, "tasks/list", &taskIDParams{})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("the token's tasks/list: %v %+v", err, list)
	}
	got, err := mcp.CallCustomMethod[*taskIDParams, *taskAnswer](ctx, reader, "tasks/get", &taskIDParams{TaskID: list.Tasks[0].TaskID})
	if err != nil || got.TaskID != list.Tasks[0].TaskID || got.Status == "" {
		t.Fatalf("the token's tasks/get: %v %+v", err, got)
	}
	other := connect("tok-b", same)
	if _, err := mcp.CallCustomMethod[*taskIDParams, *taskAnswer](ctx, other, "tasks/get", &taskIDParams{TaskID: got.TaskID}); err == nil || !strings.Contains(err.Error(), "task not found") {
		t.Fatalf("another token's tasks/get: %v", err)
	}
}
