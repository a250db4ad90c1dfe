package jsonl

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// methodCancelled is the notification by which a peer gives up a request.
const methodCancelled = "notifications/cancelled"

// noteCancelled records the request a peer's notifications/cancelled
// gives up, if it is one still owed an answer: per MCP, no response is due
// after it, so Write drops the one the handler still produces (the SDK
// answers every call, a cancelled one with an error).
func (c *Conn) noteCancelled(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() || req.Method != methodCancelled || !c.answer {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if c.pending[id.Raw()] {
		if c.cancelled == nil {
			c.cancelled = map[any]bool{}
		}
		c.cancelled[id.Raw()] = true
	}
}

// inBatch reports whether resp answers a request of an inbound batch,
// whose array answer owes every member (a cancelled one included).
func (c *Conn) inBatch(resp *jsonrpc.Response) bool {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	return c.batches[resp.ID.Raw()] != nil
}

// dropCancelled reports whether resp answers a request its peer cancelled,
// and forgets that request.
func (c *Conn) dropCancelled(resp *jsonrpc.Response) bool {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if !c.cancelled[resp.ID.Raw()] {
		return false
	}
	delete(c.cancelled, resp.ID.Raw())
	return true
}
