package broker

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// completingUpstream serves a go-sdk server in memory as unit's run: a
// prompt "greet" (and "hidden"), a template test://t/{id}, and, when
// completions is set, a completion handler that answers with the ref and
// argument it received, so a test sees what reached the upstream.
func completingUpstream(t *testing.T, b *Broker, unit string, completions bool) {
	t.Helper()
	opts := &mcp.ServerOptions{}
	if completions {
		opts.CompletionHandler = func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			p := req.Params
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{p.Ref.Type, p.Ref.Name + p.Ref.URI, p.Argument.Name + "=" + p.Argument.Value},
			}}, nil
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: unit, Version: "0"}, opts)
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, prompt)
	s.AddPrompt(&mcp.Prompt{Name: "hidden"}, prompt)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "t", URITemplate: "test://t/{id}"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("not read here")
		})

	upIn, brokerOut := io.Pipe()
	brokerIn, upOut := io.Pipe()
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: upIn, Writer: upOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close() // closes the run's stdin first: the upstream session ends
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
	// Prompts are listed just after the session counts as connected, and
	// told by the change listeners rather than Changed.
	deadline := time.After(15 * time.Second)
	for {
		ch := b.Changed()
		if connected(b, unit)() && slices.ContainsFunc(b.Prompts(""), func(p Prompt) bool { return p.Key == unit }) {
			return
		}
		select {
		case <-ch:
		case <-listed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s to connect and list its prompts", unit)
		}
	}
}

func TestScenario_ACompletionRefIsMappedToItsUpstreamAndRefusedCleanlyOtherwise(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{
		"comp":  {Key: "comp", Tools: Policy{ExcludePrompts: []string{"hidden"}, ExcludeResources: []string{"test://x/*"}}},
		"plain": {Key: "plain"},
	})
	completingUpstream(t, b, "comp", true)
	completingUpstream(t, b, "plain", false)

	if got := b.Completes(""); !slices.Equal(got, []string{"comp"}) {
		t.Fatalf("Completes = %v, want [comp] (plain declares no completions)", got)
	}
	complete := func(ref mcp.CompleteReference) (*mcp.CompleteResult, error) {
		return b.Complete(context.Background(), "", &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "pa"}})
	}

	// The ref reaches the upstream un-namespaced.
	res, err := complete(mcp.CompleteReference{Type: "ref/prompt", Name: "comp__greet"})
	if err != nil {
		t.Fatalf("prompt completion: %v", err)
	}
	if want := []string{"ref/prompt", "greet", "who=pa"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("prompt completion reached the upstream as %v, want %v", res.Completion.Values, want)
	}
	res, err = complete(mcp.CompleteReference{Type: "ref/resource", URI: "harness://comp/test://t/{id}"})
	if err != nil {
		t.Fatalf("resource completion: %v", err)
	}
	if want := []string{"ref/resource", "test://t/{id}", "who=pa"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("resource completion reached the upstream as %v, want %v", res.Completion.Values, want)
	}

	for _, c := range []struct {
		ref  mcp.CompleteReference
		want error
		says string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, errcode.ErrUnknownNamespace, "no KEY__ namespace"},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "nope__greet"}, errcode.ErrUnknownNamespace, `no upstream "nope"`},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "comp__absent"}, errcode.ErrUnknownTool, `no prompt "absent"`},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "comp__hidden"}, errcode.ErrUnknownTool, `no prompt "hidden"`},
		{mcp.CompleteReference{Type: "ref/resource", URI: "test://t/{id}"}, errcode.ErrUnknownNamespace, "not an upstream's"},
		{mcp.CompleteReference{Type: "ref/resource", URI: "harness://comp/test://x/{id}"}, errcode.ErrUnknownTool, "exclude_resources"},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "plain__greet"}, errcode.ErrInvalidArgument, "upstream plain does not offer completions"},
		{mcp.CompleteReference{Type: "ref/resource", URI: "harness://plain/test://t/{id}"}, errcode.ErrInvalidArgument, "does not offer completions"},
	} {
		_, err := complete(c.ref)
		if !errors.Is(err, c.want) || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %s%s: %v, want %v saying %q", c.ref.Type, c.ref.Name, c.ref.URI, err, c.want, c.says)
		}
	}
	// The upstream that refused is still there.
	if _, err := complete(mcp.CompleteReference{Type: "ref/prompt", Name: "comp__greet"}); err != nil {
		t.Errorf("completion after the refusals: %v", err)
	}
}
