package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/broker"
)

// Upstream questions during a stateless call (MCP 2026-07-28, the
// multi-round-trip results of SEP-2322; docs/design/mcp.md). A stateless
// request has no session to send the upstream's elicitation or sampling
// request on, so it comes back as the call's result instead: an
// input_required result carrying the question and a requestState. The
// upstream call goes on meanwhile, waiting for its answer; the client's
// retry of the call with inputResponses and that requestState hands the
// answer to the upstream and waits again, for the result or the next
// question. A retry that does not come within roundWait is a refusal to
// the upstream, and the call is stopped.

// roundWait bounds how long an upstream's question waits for the
// client's retry.
const roundWait = time.Minute

// rounds are the stateless calls waiting on a client's retry, by
// requestState.
type rounds struct {
	mu      sync.Mutex
	waiting map[string]*round
	wg      sync.WaitGroup // the upstream calls running for them
}

// round is one stateless upstream call, across its requests.
type round struct {
	owner  string
	asks   chan *roundAsk           // the upstream's questions, one at a time
	done   chan *mcp.CallToolResult // its result, once
	cancel context.CancelFunc

	mu    sync.Mutex
	state string    // the requestState of the question out, "" when none
	asked *roundAsk // that question
	n     int
}

// roundAsk is one question of the upstream's.
type roundAsk struct {
	key    string
	params mcp.InputRequest
	answer chan mcp.InputResponse // nil sent: no answer
}

// statelessCall reports whether req came on a stateless request whose
// client may be asked something, which it can only be through
// input_required results.
func (l *live) statelessCall(req *mcp.CallToolRequest) bool {
	if !l.shared || req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	// A client that can be asked nothing is refused by the session's own
	// back, as before, with no call detached from its request.
	return ip != nil && ip.ProtocolVersion >= "2026-07-28" && ip.Capabilities != nil &&
		(ip.Capabilities.Elicitation != nil || ip.Capabilities.Sampling != nil)
}

// callRounds runs an upstream call of a stateless request: run is the
// call itself, given the back its upstream's questions reach.
func (l *live) callRounds(ctx context.Context, req *mcp.CallToolRequest, run func(ctx context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	rs := &l.m.rounds
	if state := req.Params.RequestState; state != "" {
		rs.mu.Lock()
		r := rs.waiting[state]
		if r != nil && r.owner == l.taskOwner() {
			delete(rs.waiting, state)
		} else {
			r = nil
		}
		rs.mu.Unlock()
		if r == nil {
			return l.refuse(req.Params.Name, errcode.Errorf(errcode.InvalidArgument, "tool %s: no call of this caller waits on this requestState (answered, expired after %s, or never made)", errcode.Clip(req.Params.Name, 128), roundWait))
		}
		r.mu.Lock()
		a := r.asked
		r.state, r.asked = "", nil
		r.mu.Unlock()
		a.answer <- req.Params.InputResponses[a.key] // nil: the upstream hears there was none
		return l.awaitRound(ctx, r)
	}
	r := &round{owner: l.taskOwner(), asks: make(chan *roundAsk), done: make(chan *mcp.CallToolResult, 1)}
	// The call outlives this request (the next one answers it) but not the
	// Manager.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(l.m.ctx, cancel)
	r.cancel = func() { stop(); cancel() }
	caps := &mcp.ClientCapabilities{}
	if ip := req.Session.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps = ip.Capabilities
	}
	back := &roundsBack{l: l, r: r, label: l.label(), caps: caps}
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		r.done <- run(broker.WithBack(rctx, back))
	}()
	return l.awaitRound(ctx, r)
}

// awaitRound answers the request in flight with the call's result or its
// next question.
func (l *live) awaitRound(ctx context.Context, r *round) *mcp.CallToolResult {
	select {
	case res := <-r.done:
		r.cancel()
		return res
	case a := <-r.asks:
		id := make([]byte, 16)
		_, _ = rand.Read(id)
		state := hex.EncodeToString(id)
		r.mu.Lock()
		r.state, r.asked = state, a
		r.mu.Unlock()
		rs := &l.m.rounds
		rs.mu.Lock()
		if rs.waiting == nil {
			rs.waiting = map[string]*round{}
		}
		rs.waiting[state] = r
		rs.mu.Unlock()
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{a.key: a.params}, RequestState: state}
	case <-ctx.Done():
		r.cancel() // the client went away: so does the call
		return <-r.done
	}
}

// forget drops r's question if it still waits on state.
func (rs *rounds) forget(r *round, state string) {
	rs.mu.Lock()
	if rs.waiting[state] == r {
		delete(rs.waiting, state)
	}
	rs.mu.Unlock()
}

// roundsBack is a stateless call's client as its upstream's requests
// reach it: a question is sent back as the request's result.
type roundsBack struct {
	l     *live
	r     *round
	label string
	caps  *mcp.ClientCapabilities
}

func (b *roundsBack) Label() string { return b.label }

func (b *roundsBack) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if b.caps.Elicitation == nil {
		return nil, noElicitation(b.label)
	}
	resp, err := b.ask(ctx, "elicitation/create", p)
	if err != nil {
		return nil, err
	}
	if er, ok := resp.(*mcp.ElicitResult); ok {
		return er, nil
	}
	return nil, wrongAnswer("elicitation/create", resp)
}

func (b *roundsBack) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if b.caps.Sampling == nil {
		return nil, noSampling(b.label)
	}
	resp, err := b.ask(ctx, "sampling/createMessage", p)
	if err != nil {
		return nil, err
	}
	switch r := resp.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		// Retries are decoded in the tools-capable shape; a plain
		// sampling request's answer is its one content.
		if len(r.Content) == 1 {
			return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
		}
	}
	return nil, wrongAnswer("sampling/createMessage", resp)
}

// Log drops the message: a stateless request has no stream to carry it
// once its result is out.
func (b *roundsBack) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }

// ask hands q to the request in flight and waits for the client's retry
// to bring its answer.
func (b *roundsBack) ask(ctx context.Context, method string, q mcp.InputRequest) (mcp.InputResponse, error) {
	b.r.mu.Lock()
	b.r.n++
	a := &roundAsk{key: fmt.Sprintf("harness-%d", b.r.n), params: q, answer: make(chan mcp.InputResponse, 1)}
	b.r.mu.Unlock()
	select {
	case b.r.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	timer := time.NewTimer(roundWait)
	defer timer.Stop()
	select {
	case resp := <-a.answer:
		if resp == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("harness: %s: the client's retry brought no answer to it", method)}
		}
		return resp, nil
	case <-timer.C:
		b.r.mu.Lock()
		state := b.r.state
		b.r.mu.Unlock()
		b.l.m.rounds.forget(b.r, state)
		b.l.m.log.Info("stateless call: the client never came back with an answer", logkey.Session, b.label, logkey.Delay, roundWait)
		defer b.r.cancel()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("harness: %s: the client of this stateless call did not answer within %s", method, roundWait)}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func wrongAnswer(method string, resp mcp.InputResponse) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("harness: %s: the client answered with a %T", method, resp)}
}

// inputRequired is a tools/call result that asks the client first: the
// go-sdk marks only its own handlers' results so.
type inputRequired struct{ *mcp.CallToolResult }

func (r *inputRequired) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.CallToolResult)
	if err != nil {
		return nil, err
	}
	return patchJSON(b, func(m map[string]json.RawMessage) error {
		delete(m, "content") // a question carries no content
		m["resultType"] = json.RawMessage(`"input_required"`)
		return nil
	})
}
