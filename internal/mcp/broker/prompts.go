package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Upstream prompts (docs/design/mcp.md) are served like tools: KEY__prompt, read
// class, hidden by [mcp.KEY] exclude_prompts, listed again on the
// upstream's prompts/list_changed.

// Prompt is one namespaced upstream prompt and the upstream it belongs to.
type Prompt struct {
	Prompt *mcp.Prompt
	Key    string
}

// listPrompts fetches the upstream's prompts, if it offers any, and
// installs them; a failure keeps the last list and is logged.
func (b *Broker) listPrompts(ctx context.Context, log *slog.Logger, u *upstream, c *conn, cs *mcp.ClientSession) {
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Prompts == nil {
		return
	}
	got := map[string]*mcp.Prompt{}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			log.Warn("broker: listing upstream prompts", logkey.Err, c.explain(err))
			return
		}
		if p == nil || p.Name == "" || len(u.key)+len(Separator)+len(p.Name) > MaxNameLen {
			continue
		}
		got[p.Name] = p
	}
	b.mu.Lock()
	if u.conn != c {
		b.mu.Unlock()
		return
	}
	changed := !maps.EqualFunc(u.prompts, got, samePrompt)
	u.prompts = got
	b.mu.Unlock()
	if changed {
		b.fire()
	}
}

func samePrompt(a, b *mcp.Prompt) bool { return sameJSON(a, b) }

// sameJSON compares two listed items by their JSON.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Prompts returns the namespaced prompts a session of project may be
// shown (before its grant: they are all read class), sorted by name.
func (b *Broker) Prompts(project string) []Prompt {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Prompt
	for _, u := range b.visibleAll(project) {
		for name, p := range u.prompts {
			if _, excluded := firstMatch(u.policy.ExcludePrompts, name); excluded {
				continue
			}
			c := *p
			c.Name = u.key + Separator + name
			out = append(out, Prompt{Prompt: &c, Key: u.key})
		}
	}
	slices.SortFunc(out, func(x, y Prompt) int { return strings.Compare(x.Prompt.Name, y.Prompt.Name) })
	return out
}

// GetPrompt proxies prompts/get of the namespaced name. Errors wrap the
// errcode sentinels as Call's do.
func (b *Broker) GetPrompt(ctx context.Context, project, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	key, prompt, ok := SplitName(name)
	if !ok {
		return nil, fmt.Errorf("broker: prompt %s: no KEY__ namespace: %w", errcode.Quote(name), errcode.ErrUnknownNamespace)
	}
	b.mu.Lock()
	u := b.visible(project, key)
	if u == nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("broker: prompt %s: no upstream %s visible here: %w", errcode.Quote(name), errcode.Quote(key), errcode.ErrUnknownNamespace)
	}
	_, listed := u.prompts[prompt]
	_, excluded := firstMatch(u.policy.ExcludePrompts, prompt)
	cs, c, unavailable := u.session, u.conn, unavailableErr(u)
	b.mu.Unlock()
	switch {
	case excluded || (!listed && cs != nil):
		return nil, fmt.Errorf("broker: upstream %s: no prompt %s: %w", key, errcode.Quote(prompt), errcode.ErrUnknownTool)
	case cs == nil:
		return nil, unavailable
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: args})
	if err != nil {
		var rpc *jsonrpc.Error
		isRPC := errors.As(err, &rpc)
		if c != nil {
			err = c.explain(err) // a remote's text is scrubbed of its secrets
		}
		if isRPC {
			// The upstream refused (a missing argument, say): its message.
			return nil, fmt.Errorf("broker: upstream %s: prompts/get %s: %v: %w", key, prompt, err, errcode.ErrInvalidArgument)
		}
		return nil, fmt.Errorf("broker: upstream %s: prompts/get %s: %v: %w", key, prompt, err, errcode.ErrUpstreamUnavailable)
	}
	return res, nil
}
