package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
)

// Upstream resources (docs/design/mcp.md) are served under a reversible URI
// mapping: the upstream's URI (or URI template) u of upstream KEY is
// "harness://KEY/" + u downstream, so a read, a subscription or an
// expanded template finds its upstream and its own URI by the prefix.
// Read class; [mcp.KEY] exclude_resources globs (over the upstream's own
// URIs and templates) hide some; list_changed and resources/updated are
// forwarded.

// ResourcePrefix starts every downstream URI of an upstream resource.
const ResourcePrefix = "harness://"

// MapURI is the downstream URI of an upstream's uri.
func MapURI(key, uri string) string { return ResourcePrefix + key + "/" + uri }

// UnmapURI splits a downstream URI into its upstream key and the
// upstream's own URI.
func UnmapURI(uri string) (key, own string, ok bool) {
	rest, ok := strings.CutPrefix(uri, ResourcePrefix)
	if !ok {
		return "", "", false
	}
	key, own, ok = strings.Cut(rest, "/")
	return key, own, ok && key != "" && own != ""
}

// Resource is one mapped upstream resource or template and its upstream.
type Resource struct {
	Resource *mcp.Resource         // nil for a template
	Template *mcp.ResourceTemplate // nil for a resource
	Key      string
}

// resourceState is an upstream's listed resources and the subscriptions
// the broker holds on them. Guarded by Broker.mu.
type resourceState struct {
	resources map[string]*mcp.Resource         // by upstream URI
	templates map[string]*mcp.ResourceTemplate // by upstream URI template
}

// subs counts downstream subscriptions per upstream unit and URI, so the
// upstream sees one subscribe and one unsubscribe however many sessions.
type subs struct {
	mu sync.Mutex
	n  map[string]int // unit + "\x00" + upstream URI
}

// listResources fetches the upstream's resources and templates, if it
// offers any; a failure keeps the last lists and is logged.
func (b *Broker) listResources(ctx context.Context, log *slog.Logger, u *upstream, c *conn, cs *mcp.ClientSession) {
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
		return
	}
	st := resourceState{resources: map[string]*mcp.Resource{}, templates: map[string]*mcp.ResourceTemplate{}}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			log.Warn("broker: listing upstream resources", logkey.Err, c.explain(err))
			return
		}
		if r != nil && r.URI != "" {
			st.resources[r.URI] = r
		}
	}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			log.Warn("broker: listing upstream resource templates", logkey.Err, c.explain(err))
			break
		}
		if t != nil && t.URITemplate != "" {
			st.templates[t.URITemplate] = t
		}
	}
	b.mu.Lock()
	if u.conn != c {
		b.mu.Unlock()
		return
	}
	changed := !maps.EqualFunc(u.res.resources, st.resources, func(x, y *mcp.Resource) bool { return sameJSON(x, y) }) ||
		!maps.EqualFunc(u.res.templates, st.templates, func(x, y *mcp.ResourceTemplate) bool { return sameJSON(x, y) })
	u.res = st
	b.mu.Unlock()
	if changed {
		b.fire()
	}
}

// Resources returns the mapped resources and templates a session of
// project may be shown (before its grant: all read class).
func (b *Broker) Resources(project string) []Resource {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Resource
	for _, u := range b.visibleAll(project) {
		for uri, r := range u.res.resources {
			if _, ex := firstMatch(u.policy.ExcludeResources, uri); ex {
				continue
			}
			c := *r
			c.URI = MapURI(u.key, uri)
			out = append(out, Resource{Resource: &c, Key: u.key})
		}
		for tmpl, t := range u.res.templates {
			if _, ex := firstMatch(u.policy.ExcludeResources, tmpl); ex {
				continue
			}
			c := *t
			c.URITemplate = MapURI(u.key, tmpl)
			out = append(out, Resource{Template: &c, Key: u.key})
		}
	}
	slices.SortFunc(out, func(x, y Resource) int { return strings.Compare(x.uri(), y.uri()) })
	return out
}

func (r Resource) uri() string {
	if r.Resource != nil {
		return r.Resource.URI
	}
	return r.Template.URITemplate
}

// resolveResource finds the upstream session of a mapped URI.
func (b *Broker) resolveResource(project, uri string) (u *upstream, own string, cs *mcp.ClientSession, c *conn, err error) {
	key, own, ok := UnmapURI(uri)
	if !ok {
		return nil, "", nil, nil, fmt.Errorf("broker: resource %s: not an upstream's (%sKEY/URI): %w", errcode.Quote(uri), ResourcePrefix, errcode.ErrUnknownNamespace)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if u = b.visible(project, key); u == nil {
		return nil, "", nil, nil, fmt.Errorf("broker: resource %s: no upstream %s visible here: %w", errcode.Quote(uri), errcode.Quote(key), errcode.ErrUnknownNamespace)
	}
	if g, ex := firstMatch(u.policy.ExcludeResources, own); ex {
		return nil, "", nil, nil, fmt.Errorf("broker: upstream %s: resource %s is hidden by exclude_resources %q: %w", key, errcode.Quote(own), g, errcode.ErrUnknownTool)
	}
	if u.session == nil {
		return nil, "", nil, nil, unavailableErr(u)
	}
	return u, own, u.session, u.conn, nil
}

// ReadResource proxies resources/read of a mapped URI; the contents'
// URIs come back mapped.
func (b *Broker) ReadResource(ctx context.Context, project, uri string) (*mcp.ReadResourceResult, error) {
	u, own, cs, c, err := b.resolveResource(project, uri)
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: own})
	if err != nil {
		return nil, upstreamErr(c, u.key, "resources/read", err)
	}
	for _, rc := range res.Contents {
		if rc != nil && rc.URI != "" {
			rc.URI = MapURI(u.key, rc.URI)
		}
	}
	return res, nil
}

// Subscribe subscribes to a mapped URI upstream, once for every session.
func (b *Broker) Subscribe(ctx context.Context, project, uri string) error {
	u, own, cs, c, err := b.resolveResource(project, uri)
	if err != nil {
		return err
	}
	k := u.unit + "\x00" + own
	b.subs.mu.Lock()
	defer b.subs.mu.Unlock()
	if b.subs.n == nil {
		b.subs.n = map[string]int{}
	}
	if b.subs.n[k] == 0 {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: own}); err != nil {
			return upstreamErr(c, u.key, "resources/subscribe", err)
		}
	}
	b.subs.n[k]++
	return nil
}

// Unsubscribe drops one session's subscription; the last one unsubscribes
// upstream.
func (b *Broker) Unsubscribe(ctx context.Context, project, uri string) error {
	u, own, cs, c, err := b.resolveResource(project, uri)
	if err != nil {
		return err
	}
	k := u.unit + "\x00" + own
	b.subs.mu.Lock()
	defer b.subs.mu.Unlock()
	if b.subs.n[k] == 0 {
		return nil
	}
	if b.subs.n[k]--; b.subs.n[k] == 0 {
		delete(b.subs.n, k)
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: own}); err != nil {
			return upstreamErr(c, u.key, "resources/unsubscribe", err)
		}
	}
	return nil
}

// OnResourceUpdated registers f for the upstreams' resources/updated,
// with the mapped URI.
func (b *Broker) OnResourceUpdated(f func(uri string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onUpdated = f
}

func (b *Broker) resourceUpdated(key, uri string) {
	b.mu.Lock()
	f := b.onUpdated
	b.mu.Unlock()
	if f != nil {
		f(MapURI(key, uri))
	}
}

// upstreamErr classifies an upstream's failure of method: its JSON-RPC
// refusal is invalid_argument, anything else upstream_unavailable; a
// remote's text is scrubbed.
func upstreamErr(c *conn, key, method string, err error) error {
	var rpc *jsonrpc.Error
	isRPC := errors.As(err, &rpc)
	if c != nil {
		err = c.explain(err)
	}
	if isRPC {
		return fmt.Errorf("broker: upstream %s: %s: %v: %w", key, method, err, errcode.ErrInvalidArgument)
	}
	return fmt.Errorf("broker: upstream %s: %s: %v: %w", key, method, err, errcode.ErrUpstreamUnavailable)
}
