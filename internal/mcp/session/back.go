package session

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionBack is a downstream session as an upstream's requests during one
// of its calls reach it (broker.Back). A value type: every call of one
// session is the same Back, so the broker counts clients, not calls.
type sessionBack struct {
	ss    *mcp.ServerSession
	label string
}

func (s sessionBack) Label() string { return s.label }

func (s sessionBack) caps() *mcp.ClientCapabilities {
	if ip := s.ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		return ip.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// Elicit asks the client, if it declared elicitation; otherwise the
// upstream hears that this client cannot answer.
func (s sessionBack) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if s.caps().Elicitation == nil {
		return nil, noElicitation(s.label)
	}
	res, err := s.ss.Elicit(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("session %s: elicit: %w", s.label, err)
	}
	return res, nil
}

// CreateMessage asks the client for a completion, if it declared sampling.
func (s sessionBack) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if s.caps().Sampling == nil {
		return nil, noSampling(s.label)
	}
	res, err := s.ss.CreateMessage(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("session %s: sampling: %w", s.label, err)
	}
	return res, nil
}

// Log forwards a log message at the level the client asked for.
func (s sessionBack) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if err := s.ss.Log(ctx, p); err != nil {
		return fmt.Errorf("session %s: log: %w", s.label, err)
	}
	return nil
}

// noElicitation is what an upstream hears when it asks the client of a
// call (label) that declared no elicitation.
func noElicitation(label string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("harness: elicitation/create: the client of this call (%s) does not support elicitation", label)}
}

// noSampling is noElicitation for sampling.
func noSampling(label string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("harness: sampling/createMessage: the client of this call (%s) does not support sampling", label)}
}
