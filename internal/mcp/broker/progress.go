package broker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/harness-dev/harness/internal/logkey"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications sent just before a result.
//
// The go-sdk client reads an upstream's messages in order on one goroutine
// but hands notifications to a queue served by another, while a response
// completes its call straight away. So CallTool can return while the
// upstream's last progress notifications are still queued, and a route
// retired at that point would drop them. The broker therefore counts, per
// call, the progress notifications read off the connection (countingConn)
// and those the progress handler has finished with (onProgress), and Call
// waits for the two to match before it retires the route (drain). Every
// notification the upstream sent before its result was read before the
// result was, so the read count is complete once CallTool has returned.

// drainTimeout bounds how long Call waits for progress notifications read
// before the result to be handled. Handling is only a forward to the
// downstream session, so hitting it means a stuck notify or a notification
// the client read but never handed to onProgress (malformed params).
const drainTimeout = 2 * time.Second

// drain waits until r's handled progress count catches up with its read
// count, at most drainTimeout and no longer than ctx lives.
func (b *Broker) drain(ctx context.Context, r *progressRoute, tool string) {
	var timeout <-chan time.Time
	for {
		read, handled := r.read.Load(), r.handled.Load()
		if handled >= read {
			return
		}
		if timeout == nil {
			timer := time.NewTimer(drainTimeout)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-r.handledCh:
		case <-timeout:
			b.log.Warn("broker: progress notifications still unhandled after the result; dropping them",
				logkey.Upstream, r.key, logkey.Tool, tool, logkey.Read, read, logkey.Handled, handled, logkey.Waited, drainTimeout)
			return
		case <-ctx.Done():
			return
		}
	}
}

// handledOne records that onProgress is done with one notification for r.
func (r *progressRoute) handledOne() {
	r.handled.Add(1)
	select {
	case r.handledCh <- struct{}{}:
	default: // a wake-up is already pending; drain re-reads both counts
	}
}

// countingTransport is an upstream's transport with its connection wrapped
// in a countingConn.
type countingTransport struct {
	mcp.Transport
	b *Broker
	c *conn // the run whose connection this is: it gets the fast link
}

// Connect implements [mcp.Transport].
func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Connection: c, b: t.b}
	if jc, ok := c.(*jsonl.Conn); ok && t.c != nil {
		cc.fast = newFastLink(jc)
		t.c.fast.Store(cc.fast)
	}
	return cc, nil
}

// countingConn counts the progress notifications read for calls in flight,
// and takes the answers to calls forwarded as bytes (fast.go) out of the
// stream before the go-sdk client sees them.
type countingConn struct {
	mcp.Connection
	b    *Broker
	fast *fastLink // nil: every message is the client's
}

// Read implements [mcp.Connection].
func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			if c.fast != nil {
				c.fast.end()
			}
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && c.fast != nil && c.fast.deliver(resp) {
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/progress" {
			c.count(req.Params)
		}
		return msg, nil
	}
}

// count adds one to the read count of the call in flight whose upstream
// token params carries. It finds the route exactly as onProgress does
// (string token, any upstream), so the two counts stay comparable; a
// notification whose token cannot be parsed here reaches no route there.
func (c *countingConn) count(params json.RawMessage) { c.b.countProgress(params) }

// countProgress adds one to the read count of the call in flight whose
// upstream token params carries.
func (b *Broker) countProgress(params []byte) {
	var p struct {
		ProgressToken any `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	b.mu.Lock()
	r := b.progress[tok]
	b.mu.Unlock()
	if r != nil {
		r.read.Add(1)
	}
}
