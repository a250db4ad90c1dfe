package jsonl

import (
	"context"
	"fmt"

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

// WriteResult answers the call id, taken by Intercept, with result (the
// encoded result object) in one write. An answer to a call the peer
// cancelled is dropped, as Write drops one.
func (c *Conn) WriteResult(id jsonrpc.ID, result []byte) error {
	enc := canonical(id)
	if enc == nil {
		c.answered(id.Raw(), false)
		return fmt.Errorf("jsonl: write result: id %v is not a string or an integer", id.Raw())
	}
	if c.dropCancelled(&jsonrpc.Response{ID: id}) {
		c.answered(id.Raw(), false)
		return nil
	}
	data := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(enc)+len(result)+1)
	data = append(data, `{"jsonrpc":"2.0","id":`...)
	data = append(data, enc...)
	data = append(data, `,"result":`...)
	data = append(data, result...)
	data = append(data, '}', '\n')
	c.writeMu.Lock()
	_, err := c.w.Write(data)
	c.writeMu.Unlock()
	c.answered(id.Raw(), err != nil)
	if err != nil {
		return fmt.Errorf("jsonl: write: %w", err)
	}
	return nil
}

// WriteRaw writes one encoded message (no newline) as it is, in one
// write: a request or notification the caller built itself, on a
// connection whose other messages the SDK writes.
func (c *Conn) WriteRaw(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return fmt.Errorf("jsonl: write: connection closed")
	default:
	}
	msg := make([]byte, 0, len(data)+1)
	msg = append(append(msg, data...), '\n')
	c.writeMu.Lock()
	_, err := c.w.Write(msg)
	c.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("jsonl: write: %w", err)
	}
	return nil
}
