package broker

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
)

// Completions (docs/design/mcp.md, upstreams): completion/complete of an
// upstream's prompt (ref/prompt KEY__name) or resource (ref/resource
// harness://KEY/URI) goes to that upstream with its own name or URI. Read
// class; exclude_prompts / exclude_resources hide the refs they hide
// from listing.

// Completes returns the keys of the upstreams visible to sessions of
// project that are connected and declare completions.
func (b *Broker) Completes(project string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for _, u := range b.visibleAll(project) {
		if completes(u.session) {
			keys = append(keys, u.key)
		}
	}
	return keys
}

func completes(cs *mcp.ClientSession) bool {
	if cs == nil {
		return false
	}
	ir := cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Completions != nil
}

// CompleteKey is the upstream key a completion ref names; false when the
// ref is not an upstream's (no KEY__ namespace, not a harness:// URI).
func CompleteKey(ref *mcp.CompleteReference) (string, bool) {
	if ref == nil {
		return "", false
	}
	switch ref.Type {
	case "ref/prompt":
		key, _, ok := SplitName(ref.Name)
		return key, ok
	case "ref/resource":
		key, _, ok := UnmapURI(ref.URI)
		return key, ok
	}
	return "", false
}

// Complete proxies completion/complete of a namespaced ref to its
// upstream with the ref un-namespaced. Errors wrap the errcode sentinels
// as Call's do: an unknown ref or an upstream without completions is
// ErrUnknownNamespace / ErrUnknownTool / ErrInvalidArgument, an outage
// ErrUpstreamUnavailable.
func (b *Broker) Complete(ctx context.Context, project string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, fmt.Errorf("broker: completion/complete without a ref: %w", errcode.ErrInvalidArgument)
	}
	ref := *params.Ref
	var (
		key string
		u   *upstream
	)
	switch ref.Type {
	case "ref/prompt":
		k, prompt, ok := SplitName(ref.Name)
		if !ok {
			return nil, fmt.Errorf("broker: completion for prompt %s: no KEY__ namespace: %w", errcode.Quote(ref.Name), errcode.ErrUnknownNamespace)
		}
		b.mu.Lock()
		if u = b.visible(project, k); u == nil {
			b.mu.Unlock()
			return nil, fmt.Errorf("broker: completion for prompt %s: no upstream %s visible here: %w", errcode.Quote(ref.Name), errcode.Quote(k), errcode.ErrUnknownNamespace)
		}
		_, listed := u.prompts[prompt]
		_, excluded := firstMatch(u.policy.ExcludePrompts, prompt)
		connected := u.session != nil
		b.mu.Unlock()
		if excluded || (!listed && connected) {
			return nil, fmt.Errorf("broker: upstream %s: no prompt %s: %w", k, errcode.Quote(prompt), errcode.ErrUnknownTool)
		}
		key, ref.Name = k, prompt
	case "ref/resource":
		uu, own, _, _, err := b.resolveResource(project, ref.URI)
		if err != nil {
			return nil, err
		}
		u, key, ref.URI = uu, uu.key, own
	default:
		return nil, fmt.Errorf("broker: completion ref type %s: %w", errcode.Quote(ref.Type), errcode.ErrInvalidArgument)
	}
	b.mu.Lock()
	cs, c, unavailable := u.session, u.conn, unavailableErr(u)
	b.mu.Unlock()
	if cs == nil {
		return nil, unavailable
	}
	if !completes(cs) {
		return nil, fmt.Errorf("broker: upstream %s does not offer completions: %w", key, errcode.ErrInvalidArgument)
	}
	// The client's _meta is its own, as with prompts/get.
	res, err := cs.Complete(ctx, &mcp.CompleteParams{Argument: params.Argument, Context: params.Context, Ref: &ref})
	if err != nil {
		return nil, upstreamErr(c, key, "completion/complete", err)
	}
	return res, nil
}
