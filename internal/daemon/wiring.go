package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/control"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
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
	c := api.Caller{Kind: api.Operator}
	if hello, ok := protocol.HelloFrom(ctx); ok && hello.Via != "" {
		// Through the SSH bridge, which has checked its key's grant.
		c.Door, c.Actor = api.DoorSSH, hello.Via
	}
	return h.ctl.Call(ctx, c, op, args)
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
	id.Bridge, id.Via = &g, hello.Via
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
