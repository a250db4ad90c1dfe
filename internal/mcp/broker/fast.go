package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/harness-dev/harness/internal/traceparent"
)

// The tools/call fast path, upstream side. A call to a process
// upstream need not go through the go-sdk client: the broker writes the
// request's bytes on the upstream's pipe itself, under an id of its own
// (a string, which the go-sdk client, numbering its calls, never uses),
// and takes the answer out of the stream before the client reads it. The
// result stays bytes unless it must be changed: an isError result (its
// text is attributed to the upstream), a secret to mask in text whose
// escapes the mask cannot see through, a result the go-sdk would not have
// accepted. Those are decoded and handled as Call handles them. Progress
// tokens, elicitation, sampling and log messages go on as before: a call
// with a progress token takes Call, and the upstream's requests during a
// call still reach the go-sdk client, which asks the session of the call
// (WithBack).
//
// No goroutine waits for such a call (StartFast): the session's reader
// writes the request upstream, and the upstream connection's reader, on
// taking the answer out, finishes the call and hands it to the session,
// which writes the answer downstream. Both writes never wait (jsonl's
// SendRaw and SendResult). A call is two wake-ups of the daemon, as a
// byte relay is; waiting goroutines had made it four, and the scheduler's
// hand-offs between them were a third of the daemon's CPU per call.

// fastIDPrefix starts the ids of calls forwarded as bytes.
const fastIDPrefix = "harness-fast-"

// fastInlineResult is the largest result finished on the upstream
// connection's reader: reading a larger one's content and masking it
// would hold up the answers behind it for longer than a goroutine costs.
const fastInlineResult = 64 << 10

// errFastClosed is why a call forwarded as bytes failed when the
// upstream's connection ended under it.
var errFastClosed = errors.New("connection closed")

// fastLink is one upstream connection's calls forwarded as bytes.
type fastLink struct {
	conn *jsonl.Conn
	seq  atomic.Uint64

	mu    sync.Mutex
	calls map[string]*fastPending // by id, calls waiting for their answer
	ended bool
}

// fastPending is a call forwarded as bytes whose answer has not come.
// Whoever takes it out of the link's calls (take) ends it, once.
type fastPending struct {
	// end gets the raw result, or the upstream's JSON-RPC error, or why
	// there is neither (the cause a call was stopped with, errFastClosed,
	// a failed write).
	end   func(result json.RawMessage, rpc, err error)
	timer atomic.Pointer[time.Timer] // call_timeout_s, when set
}

func newFastLink(c *jsonl.Conn) *fastLink {
	return &fastLink{conn: c, calls: map[string]*fastPending{}}
}

// take removes the call id from the link and returns it, or nil when it
// has ended already.
func (f *fastLink) take(id string) *fastPending {
	f.mu.Lock()
	p := f.calls[id]
	delete(f.calls, id)
	f.mu.Unlock()
	return p
}

// deliver ends the call resp answers, on the reader that read it, and
// reports whether it was one of the link's (an answer to a call given up
// on is dropped here).
func (f *fastLink) deliver(resp *jsonrpc.Response) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok || len(id) < len(fastIDPrefix) || id[:len(fastIDPrefix)] != fastIDPrefix {
		return false
	}
	if p := f.take(id); p != nil {
		p.end(resp.Result, resp.Error, nil)
	}
	return true
}

// end fails every call in flight: the connection's reading is over.
func (f *fastLink) end() {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	calls := f.calls
	f.calls = map[string]*fastPending{}
	f.mu.Unlock()
	for _, p := range calls {
		p.end(nil, nil, errFastClosed)
	}
}

// nextID is a fresh id for a call on the link.
func (f *fastLink) nextID() string {
	return fastIDPrefix + strconv.FormatUint(f.seq.Add(1), 10)
}

// start writes the tools/call id of tool with args (valid JSON) upstream
// and files p to get its answer. It never waits; p may end before start
// returns (a failed write). An error means p was not filed and will not
// end.
func (f *fastLink) start(id, tool, trace string, args json.RawMessage, p *fastPending) error {
	name, err := json.Marshal(tool)
	if err != nil {
		return err
	}
	msg := make([]byte, 0, 96+len(id)+len(name)+len(args)+len(trace))
	msg = append(msg, `{"jsonrpc":"2.0","id":"`...)
	msg = append(msg, id...)
	msg = append(msg, `","method":"tools/call","params":{`...)
	if trace != "" {
		// A traceparent is hex and dashes: nothing to escape.
		msg = append(msg, `"_meta":{"traceparent":"`...)
		msg = append(msg, trace...)
		msg = append(msg, `"},`...)
	}
	msg = append(msg, `"name":`...)
	msg = append(msg, name...)
	msg = append(msg, `,"arguments":`...)
	msg = append(msg, args...)
	msg = append(msg, `}}`...)

	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return errFastClosed
	}
	f.calls[id] = p
	f.mu.Unlock()
	f.conn.SendRaw(msg, func(err error) {
		if err == nil {
			return
		}
		if p := f.take(id); p != nil {
			p.end(nil, nil, err)
		}
	})
	return nil
}

// cancel ends the call id with cause, if it has not ended, and tells the
// upstream it is cancelled, as the go-sdk client does (best effort: the
// write never waits).
func (f *fastLink) cancel(id string, cause error) {
	p := f.take(id)
	if p == nil {
		return
	}
	reason, _ := json.Marshal(cause.Error())
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `","reason":` + string(reason) + `}}`)
	f.conn.SendRaw(note, func(error) {})
	p.end(nil, nil, cause)
}

// FastResult is the answer of a call started by StartFast: Raw, the
// result object as bytes for the session to send on, with ContentBytes
// the size of its content as the call log counts it; or Result when it
// had to be decoded.
type FastResult struct {
	Raw          json.RawMessage
	ContentBytes int
	Result       *mcp.CallToolResult
}

// StartFast starts Call's work for a call without a progress token and
// does not wait for it: done gets the call's end exactly once, as Call's
// result and error. The call is forwarded as bytes when the upstream's
// connection allows it (a process upstream's pipes) and goes through
// Call's go-sdk client on a goroutine otherwise. Refusals, errors and
// isError results are Call's; permit, the in-flight bound, the call
// timeout and the upstream's requests during the call (WithBack on ctx)
// hold as in Call.
//
// done may run before StartFast returns (a refusal); otherwise on the
// goroutine that ended the call, which may be the upstream connection's
// reader: done must not wait. stop ends a call that has not ended with
// cause (context.Canceled, or the timeout error of a ctx), as an ended
// ctx ends Call's call; ending ctx itself does not.
func (b *Broker) StartFast(ctx context.Context, project, name string, args json.RawMessage, permit Permit, done func(FastResult, error)) (stop func(cause error)) {
	key, tool, ok := SplitName(name)
	if !ok {
		done(FastResult{}, fmt.Errorf("broker: tool %s: no KEY__ namespace: %w", errcode.Quote(name), errcode.ErrUnknownNamespace))
		return func(error) {}
	}
	args, err := callArgs(key, tool, args)
	if err != nil {
		done(FastResult{}, err)
		return func(error) {}
	}
	r, err := b.resolve(ctx, project, name, key, tool, permit)
	if err != nil {
		done(FastResult{}, err)
		return func(error) {}
	}
	var link *fastLink
	if r.c != nil {
		link = r.c.fast.Load()
	}
	if link != nil {
		select {
		case r.sem <- struct{}{}:
			return b.startLinked(ctx, r, link, key, tool, args, done)
		default: // the in-flight bound is full: wait for a slot below
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		defer cancel(nil)
		if link == nil {
			res, err := b.callResolved(ctx, r, key, tool, args, nil, nil)
			done(FastResult{Result: res}, err)
			return
		}
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			done(FastResult{}, fmt.Errorf("broker: upstream %s: tools/call %s: waiting for a free slot: %w", key, tool, ctx.Err()))
			return
		}
		done(awaitFast(ctx, func(done func(FastResult, error)) func(error) {
			return b.startLinked(ctx, r, link, key, tool, args, done)
		}))
	}()
	return cancel
}

// startLinked forwards a resolved call as bytes on link, holding a slot
// of r's in-flight bound (released when the call ends).
func (b *Broker) startLinked(ctx context.Context, r resolved, link *fastLink, key, tool string, args json.RawMessage, done func(FastResult, error)) (stop func(error)) {
	retire := func() {}
	if back, ok := ctx.Value(backKey{}).(Back); ok {
		retire = b.inFlight(r.u, back)
	}
	id := link.nextID()
	p := &fastPending{}
	p.end = func(raw json.RawMessage, rpc, err error) {
		if t := p.timer.Load(); t != nil {
			t.Stop()
		}
		retire()
		<-r.sem
		switch {
		case rpc != nil:
			done(FastResult{}, b.callErr(context.Background(), key, tool, rpc))
		case err != nil:
			done(FastResult{}, b.fastErr(key, tool, err))
		case len(raw) > fastInlineResult:
			// Sized and masked off the reader, which every session's
			// answers from this upstream wait on.
			go func() { done(b.fastResult(r.c, key, tool, raw)) }()
		default:
			done(b.fastResult(r.c, key, tool, raw))
		}
	}
	if r.timeout > 0 {
		cause := &callTimeoutError{key: key, after: r.timeout}
		p.timer.Store(time.AfterFunc(r.timeout, func() { link.cancel(id, cause) }))
	}
	b.fastCalls.Add(1)
	var trace string
	if tp, ok := traceparent.From(ctx); ok {
		trace = tp.String()
	}
	if err := link.start(id, tool, trace, args, p); err != nil {
		p.end(nil, nil, err)
	}
	return func(cause error) { link.cancel(id, cause) }
}

// fastErr is callErr for a call forwarded as bytes that ended without an
// answer: stopped with a cause (a timeout, a cancellation), or failed.
func (b *Broker) fastErr(key, tool string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, new(*callTimeoutError)) {
		return b.stopped(key, tool, err)
	}
	return b.callErr(context.Background(), key, tool, err)
}

// fastEnd is a call's end as done gets it.
type fastEnd struct {
	res FastResult
	err error
}

// awaitFast runs a call begun by start and waits for its end, stopping it
// when ctx ends first (with the ctx's timeout error when that is why).
func awaitFast(ctx context.Context, start func(done func(FastResult, error)) (stop func(error))) (FastResult, error) {
	ch := make(chan fastEnd, 1)
	stop := start(func(res FastResult, err error) { ch <- fastEnd{res, err} })
	select {
	case e := <-ch:
		return e.res, e.err
	case <-ctx.Done():
		cause := ctx.Err()
		if c := context.Cause(ctx); errors.As(c, new(*callTimeoutError)) {
			cause = c
		}
		stop(cause)
		e := <-ch
		return e.res, e.err
	}
}

// FastCalls is how many calls were forwarded as bytes, for tests and the
// bench to tell which path served a call.
func (b *Broker) FastCalls() uint64 { return b.fastCalls.Load() }
