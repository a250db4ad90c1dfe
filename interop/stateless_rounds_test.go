//go:build interop

package interop

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestScenario_StatelessCallsAskThroughInputRequired: during a
// 2026-07-28 (stateless) call, server-everything's elicitation and
// sampling requests come back to the go-sdk client as input_required
// results; its retry with the answers reaches the upstream, whose result
// then answers the call. A retry with a requestState nobody issued is
// refused, and a client that declared no elicitation is still told so.
func TestScenario_StatelessCallsAskThroughInputRequired(t *testing.T) {
	f := newFleet(t, fmt.Sprintf("[daemon]\nmcp_http = \"127.0.0.1:0\"\nmcp_http_operator_allow = [\"read\", \"write\"]\n\n[mcp.everything]\ncmd = %q\nargs = [\"stdio\"]\n", bin("mcp-server-everything")))
	f.waitUpstreams("everything")
	var info struct {
		MCPURL string `json:"mcp_url"`
	}
	f.MustJSON(&info, "daemon-info")
	tok, _, code := f.Run("--state-dir", f.State, "mcp", "token")
	if code != 0 {
		t.Fatalf("mcp token: exit %d", code)
	}
	token := strings.TrimSpace(tok)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless-rounds", Version: "1"}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: info.MCPURL, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %q, want 2026-07-28", v)
		}
		return cs
	}
	var elicited, sampled atomic.Int32
	answering := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop-model", StopReason: "endTurn", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	}
	cs := connect(answering)
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-elicitation-request"})
	if err != nil || res.IsError || !strings.Contains(text(res), "Ada Lovelace") || elicited.Load() != 1 {
		t.Fatalf("elicitation over a stateless call: %v %+v %q (asked %d)", err, res, text(res), elicited.Load())
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-sampling-request", Arguments: map[string]any{"prompt": "six times seven"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "forty-two") || sampled.Load() != 1 {
		t.Fatalf("sampling over a stateless call: %v %q (asked %d)", err, text(res), sampled.Load())
	}

	// The rounds by hand: the question, a forged state, then the answer.
	manual := *answering
	manual.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	ms := connect(&manual)
	first, err := ms.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-elicitation-request"})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, first)
	}
	var key string
	for k, q := range first.InputRequests {
		if _, ok := q.(*mcp.ElicitParams); !ok {
			t.Fatalf("asked %T", q)
		}
		key = k
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace Hopper"}}}
	forged, err := ms.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-elicitation-request", InputResponses: answer, RequestState: "not-issued"})
	if err != nil || !forged.IsError || !strings.Contains(text(forged), "requestState") {
		t.Fatalf("a forged requestState: %v %q", err, text(forged))
	}
	done, err := ms.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-elicitation-request", InputResponses: answer, RequestState: first.RequestState})
	if err != nil || done.IsError || done.NeedsInput() || !strings.Contains(text(done), "Grace Hopper") {
		t.Fatalf("the answered round: %v %q", err, text(done))
	}

	bare := connect(&mcp.ClientOptions{})
	res, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-elicitation-request"})
	if err != nil || !res.IsError || !strings.Contains(text(res), "does not support elicitation") {
		t.Fatalf("a client without elicitation: %v %q", err, text(res))
	}
}
