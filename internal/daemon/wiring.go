package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/session"
	"github.com/harness-dev/harness/internal/protocol"
	"github.com/harness-dev/harness/internal/supervise"
)

// handler serves the control socket: control requests go to control.Call
// with the operator's authority; MCP streams become sessions.
type handler struct {
	ctl *control.Control
	mgr *session.Manager
	log *slog.Logger
}

func (h handler) Call(ctx context.Context, op string, args json.RawMessage) (any, error) {
	return h.ctl.Call(ctx, api.Caller{Kind: api.Operator}, op, args)
}

// AuthenticateMCP refuses an unknown or revoked token before the Welcome,
// so `harness mcp` can tell its user why.
func (h handler) AuthenticateMCP(hello protocol.Hello) error {
	_, err := h.identity(hello)
	return err
}

// identity is who an MCP-mode Hello says the session is: a token's
// harness, or unattributed with --allow-control, or (protocol 1.3) with
// the grant of the SSH bridge it came through.
func (h handler) identity(hello protocol.Hello) (session.Identity, error) {
	id, err := h.mgr.Authenticate(hello.Token, hello.AllowControl)
	if err != nil || hello.Grant == nil {
		return id, err
	}
	if hello.Token != "" || hello.AllowControl {
		return session.Identity{}, fmt.Errorf("mcp hello: a grant goes with neither a token nor allow_control: %w", errcode.ErrInvalidArgument)
	}
	g, err := api.ParseGrant(hello.Grant)
	if err != nil {
		return session.Identity{}, fmt.Errorf("mcp hello: grant: %w: %w", err, errcode.ErrInvalidArgument)
	}
	id.Bridge = &g
	return id, nil
}

func (h handler) ServeMCP(ctx context.Context, conn net.Conn, hello protocol.Hello) {
	id, err := h.identity(hello)
	if err != nil {
		// The token died between the handshake and now (its run ended).
		h.log.Info("mcp session refused", logkey.Err, err)
		return
	}
	if err := h.mgr.Serve(ctx, conn, id); err != nil && ctx.Err() == nil {
		h.log.Debug("mcp session ended", logkey.Harness, id.Harness, logkey.Err, err)
	}
}

// ServeMCPStdio serves a session on the stdio `harness mcp` handed over
// (protocol 1.1): the same session as ServeMCP, read from the client's
// stdin and written to its stdout directly.
func (h handler) ServeMCPStdio(ctx context.Context, stdio io.ReadWriteCloser, hello protocol.Hello) error {
	id, err := h.identity(hello)
	if err != nil {
		h.log.Info("mcp session refused", logkey.Err, err)
		return err
	}
	err = h.mgr.Serve(ctx, stdio, id)
	switch {
	case errors.Is(err, session.ErrClosed):
		return fmt.Errorf("the daemon is shutting down: %w", errcode.ErrDaemonUnavailable)
	case err != nil && ctx.Err() == nil:
		h.log.Debug("mcp session ended", logkey.Harness, id.Harness, logkey.Err, err)
		return err
	}
	return nil
}

// authority answers the session layer's questions from the live token
// registry and the configuration in force, per call.
type authority struct {
	tokens *supervise.Tokens
	ctl    *control.Control
}

func (a authority) ResolveToken(token string) (string, bool) {
	unit, _, ok := a.tokens.Lookup(token)
	return unit, ok
}

func (a authority) Grant(harness string) (api.Grant, bool) {
	return a.ctl.HarnessGrant(harness)
}

func (a authority) OperatorGrant() api.Grant {
	return a.ctl.Config().Daemon.MCPHTTPOperatorAllow
}

// ToolMode is the harness's mcp_tools in force (session.ToolModes).
func (a authority) ToolMode(harness string) api.ToolMode {
	h, ok := a.ctl.HarnessConfig(harness)
	if !ok {
		return api.ToolsAll
	}
	return h.MCPTools
}

// OperatorToolMode is [daemon] mcp_http_operator_tools in force.
func (a authority) OperatorToolMode() api.ToolMode {
	return a.ctl.Config().Daemon.MCPHTTPOperatorTools
}

func (a authority) Project(harness string) string {
	h, ok := a.ctl.HarnessConfig(harness)
	if !ok {
		return ""
	}
	return h.Project
}

// brokerHooks adapts the broker to control.UpstreamHooks.
type brokerHooks struct{ b *broker.Broker }

func (h brokerHooks) Configure(units map[string]control.UpstreamRef) {
	m := make(map[string]broker.Upstream, len(units))
	for name, r := range units {
		m[name] = broker.Upstream{Key: r.Key, Project: r.Project, CallTimeout: r.CallTimeout, Tools: broker.Policy{
			ReadTools: r.Tools.ReadTools, WriteTools: r.Tools.WriteTools, ExcludeTools: r.Tools.ExcludeTools,
			ExcludePrompts: r.Tools.ExcludePrompts, ExcludeResources: r.Tools.ExcludeResources,
		}}
	}
	h.b.Configure(m)
}

func (h brokerHooks) Attach(unit string, run uint64, stdin io.WriteCloser, stdout io.ReadCloser) {
	h.b.Attach(unit, run, stdin, stdout)
}

func (h brokerHooks) Connect(ctx context.Context, unit string, r supervise.Remote) {
	h.b.ConnectRemote(ctx, unit, r.Run, r.URL, r.Header, r.Secrets, r.Ended)
}

func (h brokerHooks) Detach(unit string, run uint64, next time.Time, reason string) {
	h.b.Detach(unit, run, next, reason)
}

func (h brokerHooks) Status() []control.BrokerStatus {
	var out []control.BrokerStatus
	for _, s := range h.b.Status() {
		out = append(out, control.BrokerStatus{Unit: s.Unit, Tools: s.Tools, Connected: s.Connected, LastError: s.LastError, ToolClasses: s.Classes})
	}
	return out
}

func (h brokerHooks) Warnings() []string { return h.b.Warnings() }
