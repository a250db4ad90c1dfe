package session

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// UpstreamCompletions is an optional capability of Upstreams:
// completion/complete of an upstream's prompt or resource (docs/design/mcp.md
// passthrough). *broker.Broker has it.
type UpstreamCompletions interface {
	// Completes is the keys of the upstreams visible to project that
	// declare completions.
	Completes(project string) []string
	// Complete proxies completion/complete of a namespaced ref.
	Complete(ctx context.Context, project string, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

const (
	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
)

// offersCompletions is whether the session is granted read on an upstream
// that declares completions: then, and only then, the session is told the
// completions capability.
func (l *live) offersCompletions() bool {
	up, ok := l.m.ups.(UpstreamCompletions)
	if !ok {
		return false
	}
	g := l.grant()
	for _, key := range up.Completes(l.project()) {
		if g.Allows(key, api.Read) {
			return true
		}
	}
	return false
}

// completionsCapMiddleware takes the completions capability (the go-sdk
// declares it because the server has a handler) out of the handshake's
// answer when no upstream the session may read offers completions.
// Capabilities are fixed at the handshake: an upstream that connects later
// is completed for sessions that began after it.
func (l *live) completionsCapMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || (method != methodInitialize && method != methodDiscover) {
			return res, err
		}
		var caps *mcp.ServerCapabilities
		switch r := res.(type) {
		case *mcp.InitializeResult:
			caps = r.Capabilities
		case *mcp.DiscoverResult:
			caps = r.Capabilities
		}
		if caps != nil && caps.Completions != nil && !l.offersCompletions() {
			caps.Completions = nil
		}
		return res, err
	}
}

// complete answers completion/complete: the ref (ref/prompt KEY__name,
// ref/resource harness://KEY/URI) goes to its upstream, read class in
// KEY, checked against the grant in force. Anything else is an invalid
// params error that says why.
func (l *live) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	what := ref.Name
	if ref.Type == "ref/resource" {
		what = ref.URI
	}
	up, ok := l.m.ups.(UpstreamCompletions)
	key, mapped := broker.CompleteKey(ref)
	if ref.Type == "ref/prompt" && mapped && l.markdownPrompt(ref.Name) {
		mapped = false // a markdown prompt of that name wins, and has no completions
	}
	if !ok || !mapped {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no completions for %s %s: not an upstream's", ref.Type, errcode.Quote(errcode.Clip(what, 256)))}
	}
	if err := l.permit(l.grant(), what, key, api.Read); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err := up.Complete(ctx, l.project(), req.Params)
	if err != nil {
		l.m.log.Info("upstream completion failed", logkey.Session, l.label(), logkey.Prompt, errcode.Clip(what, 256), logkey.Err, err)
		return nil, rpcErr(what, err)
	}
	return res, nil
}

// markdownPrompt is whether name is one of the markdown prompts.
func (l *live) markdownPrompt(name string) bool {
	ps := l.m.currentPrompts()
	if ps == nil {
		return false
	}
	for _, p := range ps.Prompts() {
		if p != nil && p.Name == name {
			return true
		}
	}
	return false
}
