package jsonl

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Requests taken out of the SDK's hands (Transport.Intercept): a caller
// that can answer a request from its bytes alone (the session layer's
// tools/call fast path) sees it first and answers it here, on the same
// connection, so its answer follows every rule an SDK answer follows.

// intercepted offers msg to the hook and reports whether it took it.
func (c *Conn) intercepted(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || c.hook == nil {
		return false
	}
	if s, ok := req.ID.Raw().(string); ok && len(s) >= len(standIn) && s[:len(standIn)] == standIn {
		return false // its raw id lives in rawIDs, which only Write restores
	}
	return c.hook(c, req)
}
