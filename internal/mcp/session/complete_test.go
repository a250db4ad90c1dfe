package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// brokerEnv is a Manager over a real broker whose upstreams are go-sdk
// servers in memory.
func brokerEnv(t *testing.T, ups map[string]broker.Upstream) (*env, *broker.Broker) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b := broker.New(logger, broker.Options{})
	b.Configure(ups)
	e := &env{ops: mcptest.NewOps(), auth: mcptest.NewAuth(), prompts: &fakePrompts{}}
	e.m = NewManager(e.ops, e.auth, b, func() Prompts { return e.prompts }, logger, "test")
	t.Cleanup(e.m.Close)
	t.Cleanup(b.Close)
	return e, b
}

// memUpstream serves a go-sdk server as unit's run, with a prompt "greet"
// and, when completions is set, a completion handler that answers with
// the ref it received.
func memUpstream(t *testing.T, b *broker.Broker, unit string, completions bool) {
	t.Helper()
	opts := &mcp.ServerOptions{}
	if completions {
		opts.CompletionHandler = func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			r := req.Params.Ref
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Name + r.URI, req.Params.Argument.Value}}}, nil
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: unit, Version: "0"}, opts)
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	upIn, brokerOut := io.Pipe()
	brokerIn, upOut := io.Pipe()
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: upIn, Writer: upOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close() // ends the run: its stdin closes, and the upstream session with it
		upOut.Close()
		_ = ss.Wait()
	})
	listed := make(chan struct{}, 1)
	defer b.OnChange(func() {
		select {
		case listed <- struct{}{}:
		default:
		}
	})()
	b.Serve(context.Background(), api.UpstreamRun{Unit: unit, Run: 1, Link: api.Pipes{Stdin: brokerOut, Stdout: brokerIn}})
	for {
		ch := b.Changed()
		// Prompts are listed just after the session counts as connected,
		// and told by the change listeners rather than Changed.
		if slices.ContainsFunc(b.Status(), func(s broker.Status) bool { return s.Unit == unit && s.Connected }) &&
			slices.ContainsFunc(b.Prompts(""), func(p broker.Prompt) bool { return p.Key == unit }) {
			return
		}
		select {
		case <-ch:
		case <-listed:
		case <-time.After(waitFor):
			t.Fatalf("timed out waiting for %s to connect and list its prompts", unit)
		}
	}
}

func completeRef(cs *mcp.ClientSession, ref mcp.CompleteReference, value string) (*mcp.CompleteResult, error) {
	return cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: value}})
}

func TestScenario_CompletionsPassThroughToTheUpstreamOfTheRefWithinTheGrant(t *testing.T) {
	e, b := brokerEnv(t, map[string]broker.Upstream{"comp": {Key: "comp"}, "plain": {Key: "plain"}})
	memUpstream(t, b, "comp", true)
	memUpstream(t, b, "plain", false)

	// Read on comp: the capability is declared and refs reach comp bare.
	e.auth.SetAllowed("web", "read")
	cs, _ := e.connect(t, Identity{Harness: "web"})
	if caps := cs.InitializeResult().Capabilities; caps.Completions == nil {
		t.Fatalf("capabilities %+v: no completions, though upstream comp offers them", caps)
	}
	res, err := completeRef(cs, mcp.CompleteReference{Type: "ref/prompt", Name: "comp__greet"}, "pa")
	if err != nil {
		t.Fatalf("complete comp__greet: %v", err)
	}
	if want := []string{"greet", "pa"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("comp got %v, want %v", res.Completion.Values, want)
	}
	res, err = completeRef(cs, mcp.CompleteReference{Type: "ref/resource", URI: "harness://comp/test://t/{id}"}, "1")
	if err != nil {
		t.Fatalf("complete a harness://comp/ URI: %v", err)
	}
	if want := []string{"test://t/{id}", "1"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("comp got %v, want %v", res.Completion.Values, want)
	}

	// Refusals are JSON-RPC errors that say why; the session goes on.
	e.prompts.set(&mcp.Prompt{Name: "mine"})
	for _, c := range []struct {
		ref  mcp.CompleteReference
		says string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "mine"}, `no completions for ref/prompt "mine": not an upstream's`},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "plain__greet"}, "upstream plain does not offer completions"},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "nope__greet"}, `no upstream "nope"`},
		{mcp.CompleteReference{Type: "ref/resource", URI: "file:///etc/passwd"}, "not an upstream's"},
	} {
		_, err := completeRef(cs, c.ref, "x")
		if rpc := (*jsonrpc.Error)(nil); err == nil || !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %s%s: %v, want invalid params saying %q", c.ref.Type, c.ref.Name, c.ref.URI, err, c.says)
		}
	}

	// Granted only plain (no completions): not declared, and comp's refs
	// are refused naming the grant.
	e.auth.SetAllowed("other", "plain:read")
	other, _ := e.connect(t, Identity{Harness: "other"})
	if caps := other.InitializeResult().Capabilities; caps.Completions != nil {
		t.Errorf("a session granted no completing upstream is told completions: %+v", caps.Completions)
	}
	if _, err := completeRef(other, mcp.CompleteReference{Type: "ref/prompt", Name: "comp__greet"}, "pa"); err == nil || !strings.Contains(err.Error(), "comp:read") {
		t.Errorf("ungranted comp__greet: %v, want not permitted naming comp:read", err)
	}
	if _, err := completeRef(cs, mcp.CompleteReference{Type: "ref/prompt", Name: "comp__greet"}, "still"); err != nil {
		t.Errorf("completion after the refusals: %v", err)
	}
}
