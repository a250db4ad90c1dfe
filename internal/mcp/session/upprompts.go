package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// UpstreamPrompts is an optional capability of Upstreams: the upstreams'
// own prompts, namespaced KEY__prompt (docs/design/mcp.md). *broker.Broker has it.
type UpstreamPrompts interface {
	Prompts(project string) []broker.Prompt
	GetPrompt(ctx context.Context, project, name string, args map[string]string) (*mcp.GetPromptResult, error)
}

// getUpstreamPrompt answers prompts/get of a KEY__prompt that is not a
// markdown prompt: read class in KEY, checked against the grant in force.
// handled is false for names that are not an upstream's.
func (l *live) getUpstreamPrompt(ctx context.Context, ps Prompts, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, handled bool, err error) {
	name := req.Params.Name
	up, ok := l.m.ups.(UpstreamPrompts)
	if !ok || !strings.Contains(name, broker.Separator) {
		return nil, false, nil
	}
	if ps != nil {
		for _, p := range ps.Prompts() {
			if p != nil && p.Name == name {
				return nil, false, nil // a markdown prompt of that name wins
			}
		}
	}
	key, _, _ := strings.Cut(name, broker.Separator)
	if err := l.permit(l.grant(), name, key, api.Read); err != nil {
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err = up.GetPrompt(ctx, l.project(), name, req.Params.Arguments)
	if err != nil {
		l.m.log.Info("upstream prompt failed", logkey.Session, l.label(), logkey.Prompt, errcode.Clip(name, 128), logkey.Err, err)
		var code int64 = jsonrpc.CodeInvalidParams
		if errors.Is(err, errcode.ErrUpstreamUnavailable) {
			code = jsonrpc.CodeInternalError
		}
		return nil, true, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("%s: %v", name, err)}
	}
	return res, true, nil
}
