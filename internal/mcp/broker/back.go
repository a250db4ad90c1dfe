package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/logkey"
)

// Server-to-client requests (docs/design/mcp.md): an upstream that asks its client
// a question (elicitation), for a completion (sampling), or logs, is asked
// back by the broker on behalf of the downstream session whose call it is
// serving. The broker's one connection to an upstream carries no per-call
// identity for such requests, so they go to the session of the call in
// flight on that upstream: exactly one session must have calls there. When
// none has, or several have, or that session's client lacks the
// capability, the upstream gets a JSON-RPC error saying so.

// Back is the downstream session a call came from, as the upstream's
// requests reach it.
type Back interface {
	// Label names the session in errors and logs ("harness web", …).
	Label() string
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Log(ctx context.Context, p *mcp.LoggingMessageParams) error
}

type backKey struct{}

// WithBack tells Call which session a call comes from, so the upstream's
// requests during the call reach it.
func WithBack(ctx context.Context, b Back) context.Context {
	return context.WithValue(ctx, backKey{}, b)
}

// BackFrom is the session a call came from (WithBack), for an Upstreams
// other than the broker that asks the caller itself.
func BackFrom(ctx context.Context) (Back, bool) {
	b, ok := ctx.Value(backKey{}).(Back)
	return b, ok
}

// inFlight registers back as having a call in flight on u; the returned
// function retires it.
func (b *Broker) inFlight(u *upstream, back Back) func() {
	if back == nil {
		return func() {}
	}
	b.mu.Lock()
	if u.backs == nil {
		u.backs = map[Back]int{}
	}
	u.backs[back]++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if u.backs[back]--; u.backs[back] <= 0 {
			delete(u.backs, back)
		}
		if len(u.backs) == 0 {
			u.lastBack, u.lastBackAt = back, time.Now()
		}
		b.mu.Unlock()
	}
}

// logGrace is how long after its last call ended a session still gets the
// upstream's log messages: the go-sdk client may hand the broker a message
// the server sent just before its result after the result itself.
const logGrace = time.Second

// logBack is where a log message of the upstream of unit goes: the one
// session with calls in flight, or the one whose call ended within
// logGrace when none is in flight.
func (b *Broker) logBack(unit string) Back {
	if back, err := b.backFor(unit, "notifications/message"); err == nil {
		return back
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.ups[unit]; u != nil && len(u.backs) == 0 && u.lastBack != nil && time.Since(u.lastBackAt) < logGrace {
		return u.lastBack
	}
	return nil
}

// backFor is the one session with calls in flight on the upstream of unit,
// or the JSON-RPC error the upstream gets instead.
func (b *Broker) backFor(unit, method string) (Back, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.ups[unit]
	if u == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("harness: %s: this upstream is not configured any more", method)}
	}
	switch len(u.backs) {
	case 0:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("harness: %s: no tool call of this server is in flight, so there is no client to ask (harness forwards %s only during a call)", method, method)}
	case 1:
		for back := range u.backs {
			return back, nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("harness: %s: calls of %d clients are in flight on this server; harness cannot tell which one asks", method, len(u.backs))}
}

// backHandlers are the client handlers that ask the session of the call
// in flight on the upstream of unit.
func (b *Broker) backHandlers(opts *mcp.ClientOptions, unit string) {
	opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		back, err := b.backFor(unit, "elicitation/create")
		if err != nil {
			return nil, err
		}
		res, err := back.Elicit(ctx, req.Params)
		if err != nil {
			b.log.Info("broker: elicitation refused downstream", logkey.Unit, unit, logkey.Session, back.Label(), logkey.Err, err)
			return nil, downstreamErr("elicitation/create", back, err)
		}
		return res, nil
	}
	opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		back, err := b.backFor(unit, "sampling/createMessage")
		if err != nil {
			return nil, err
		}
		res, err := back.CreateMessage(ctx, req.Params)
		if err != nil {
			b.log.Info("broker: sampling refused downstream", logkey.Unit, unit, logkey.Session, back.Label(), logkey.Err, err)
			return nil, downstreamErr("sampling/createMessage", back, err)
		}
		return res, nil
	}
	opts.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
		back := b.logBack(unit)
		if back == nil {
			b.log.Debug("broker: upstream log message with no call in flight", logkey.Unit, unit)
			return
		}
		if err := back.Log(ctx, req.Params); err != nil {
			b.log.Debug("broker: forwarding an upstream log message", logkey.Unit, unit, logkey.Err, err)
		}
	}
}

// downstreamErr is the upstream's answer when the downstream client
// refused or could not answer: its own JSON-RPC error when it sent one.
func downstreamErr(method string, back Back, err error) error {
	if rpc, ok := err.(*jsonrpc.Error); ok {
		return rpc
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("harness: %s: the client of the call (%s) could not answer: %v", method, back.Label(), err)}
}
