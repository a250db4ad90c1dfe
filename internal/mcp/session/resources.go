package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// UpstreamResources is an optional capability of Upstreams: the
// upstreams' resources and templates under harness://KEY/ URIs
// (docs/design/mcp.md), read and subscribed through the broker. *broker.Broker has it.
type UpstreamResources interface {
	Resources(project string) []broker.Resource
	ReadResource(ctx context.Context, project, uri string) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, project, uri string) error
	Unsubscribe(ctx context.Context, project, uri string) error
}

const methodReadResource = "resources/read"

// refreshResources brings the server's resources and templates in line
// with the upstreams' that the grant covers (read on their KEY).
func (l *live) refreshResources() {
	up, ok := l.m.ups.(UpstreamResources)
	if !ok {
		return
	}
	grant := l.grant()
	wantR, wantT := map[string]wanted[*mcp.Resource]{}, map[string]wanted[*mcp.ResourceTemplate]{}
	for _, r := range up.Resources(l.project()) {
		if !grant.Allows(r.Key, api.Read) {
			continue
		}
		if r.Resource != nil {
			b, _ := json.Marshal(r.Resource)
			wantR[r.Resource.URI] = wanted[*mcp.Resource]{string(b), r.Resource}
		} else {
			b, _ := json.Marshal(r.Template)
			wantT[r.Template.URITemplate] = wanted[*mcp.ResourceTemplate]{string(b), r.Template}
		}
	}
	var gone []string
	for uri := range l.resources {
		if _, ok := wantR[uri]; !ok {
			gone = append(gone, uri)
			delete(l.resources, uri)
		}
	}
	if len(gone) > 0 {
		l.server.RemoveResources(gone...)
	}
	gone = nil
	for tmpl := range l.templates {
		if _, ok := wantT[tmpl]; !ok {
			gone = append(gone, tmpl)
			delete(l.templates, tmpl)
		}
	}
	if len(gone) > 0 {
		l.server.RemoveResourceTemplates(gone...)
	}
	for uri, w := range wantR {
		if l.resources[uri] != w.fingerprint && l.guard("resource", uri, func() { l.server.AddResource(w.item, l.readResource) }) {
			l.resources[uri] = w.fingerprint
		}
	}
	for tmpl, w := range wantT {
		if l.templates[tmpl] != w.fingerprint && l.guard("resource template", tmpl, func() { l.server.AddResourceTemplate(w.item, l.readResource) }) {
			l.templates[tmpl] = w.fingerprint
		}
	}
}

// guard runs add, which the go-sdk makes panic on a URI it cannot parse:
// that costs the one resource, not the daemon.
func (l *live) guard(what, name string, add func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			l.m.log.Warn("skipping upstream "+what+" the MCP server refuses", logkey.Session, l.label(), logkey.Resource, errcode.Clip(name, 256), logkey.Err, fmt.Sprint(r))
			ok = false
		}
	}()
	add()
	return true
}

// readResource answers resources/read of an upstream's mapped URI, read
// class in its KEY, checked against the grant in force.
func (l *live) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	up, ok := l.m.ups.(UpstreamResources)
	key, _, mapped := broker.UnmapURI(uri)
	if !ok || !mapped {
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("resource %s not found", errcode.Quote(uri))}
	}
	if err := l.permit(l.grant(), uri, key, api.Read); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err := up.ReadResource(ctx, l.project(), uri)
	if err != nil {
		l.m.log.Info("upstream resource read failed", logkey.Session, l.label(), logkey.Resource, errcode.Clip(uri, 256), logkey.Err, err)
		return nil, rpcErr(uri, err)
	}
	return res, nil
}

// subscribe and unsubscribe forward a session's resource subscription; the
// go-sdk keeps which sessions subscribed to what, for ResourceUpdated.
func (l *live) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return l.subscription(ctx, req.Params.URI, true)
}

func (l *live) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return l.subscription(ctx, req.Params.URI, false)
}

func (l *live) subscription(ctx context.Context, uri string, on bool) error {
	up, ok := l.m.ups.(UpstreamResources)
	key, _, mapped := broker.UnmapURI(uri)
	if !ok || !mapped {
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("resource %s not found", errcode.Quote(uri))}
	}
	if err := l.permit(l.grant(), uri, key, api.Read); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	var err error
	if on {
		err = up.Subscribe(ctx, l.project(), uri)
	} else {
		err = up.Unsubscribe(ctx, l.project(), uri)
	}
	if err != nil {
		return rpcErr(uri, err)
	}
	return nil
}

// rpcErr is a broker error as a JSON-RPC error: an outage is internal, a
// refusal invalid params.
func rpcErr(what string, err error) error {
	var code int64 = jsonrpc.CodeInvalidParams
	if errors.Is(err, errcode.ErrUpstreamUnavailable) {
		code = jsonrpc.CodeInternalError
	}
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf("%s: %v", errcode.Clip(what, 256), err)}
}

// ResourceUpdated tells every session subscribed to uri (a mapped upstream
// URI) that it changed; the broker calls it on an upstream's
// notifications/resources/updated.
func (m *Manager) ResourceUpdated(uri string) {
	m.mu.Lock()
	all := make([]*live, 0, len(m.live))
	for l := range m.live {
		all = append(all, l)
	}
	m.mu.Unlock()
	for _, l := range all {
		if err := l.server.ResourceUpdated(m.ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			m.log.Debug("forwarding resources/updated", logkey.Session, l.label(), logkey.Err, err)
		}
	}
}
