package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A call's id goes back to the peer byte for byte. The SDK's ID holds an
// int64 or a string, so an id it cannot hold as written (1.5 came back as
// 1, 1e40 as -9223372036854775808, "\u0041" as "A") would not match the
// caller's: such a call is given a stand-in string id for the SDK, and its
// answer gets the raw id back on the way out (and a cancellation naming
// the raw id names the stand-in).

// standIn is the prefix of stand-in ids; the NUL keeps them apart from any
// id a peer is likely to choose.
const standIn = "\x00jsonl-id-"

// rawIDs maps stand-ins to raw ids and back, for calls not answered yet.
type rawIDs struct {
	next   uint64
	byID   map[string][]byte // stand-in -> raw id
	byText map[string]string // raw id -> stand-in
}

// canonical is how the SDK writes id.
func canonical(id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(nil, v, 10)
	case string:
		b, _ := json.Marshal(v)
		return b
	}
	return nil
}

// standInFor replaces the id of a call whose raw id the SDK would not
// write back as it came (raw aliases the read buffer).
func (c *Conn) standInFor(req *jsonrpc.Request, raw []byte) {
	if !req.IsCall() || bytes.Equal(canonical(req.ID), raw) {
		return
	}
	c.rawMu.Lock()
	defer c.rawMu.Unlock()
	r := &c.raw
	if r.byID == nil {
		r.byID, r.byText = map[string][]byte{}, map[string]string{}
	}
	r.next++
	s := standIn + strconv.FormatUint(r.next, 10)
	r.byID[s] = bytes.Clone(raw)
	r.byText[string(raw)] = s
	req.ID, _ = jsonrpc.MakeID(s) // a string id is always made
}

// restoreID puts the raw id back into data, the encoding of resp, if resp
// answers a call that was given a stand-in.
func (c *Conn) restoreID(resp *jsonrpc.Response, data []byte) []byte {
	s, ok := resp.ID.Raw().(string)
	if !ok || len(s) < len(standIn) || s[:len(standIn)] != standIn {
		return data
	}
	c.rawMu.Lock()
	raw, ok := c.raw.byID[s]
	if ok {
		delete(c.raw.byID, s)
		delete(c.raw.byText, string(raw))
	}
	c.rawMu.Unlock()
	if !ok {
		return data
	}
	enc := canonical(resp.ID)
	i := bytes.Index(data, enc) // the id is the envelope's second member, before any result
	if i < 0 {
		return data
	}
	return append(append(append([]byte(nil), data[:i]...), raw...), data[i+len(enc):]...)
}

// standInOfCancelled rewrites a notifications/cancelled that names a raw
// id given a stand-in so that it names the stand-in: the SDK then cancels
// that call, not another whose id the raw one would have been read as.
func (c *Conn) standInOfCancelled(req *jsonrpc.Request) {
	if req.IsCall() || req.Method != methodCancelled {
		return
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil || p["requestId"] == nil {
		return
	}
	c.rawMu.Lock()
	s, ok := c.raw.byText[string(bytes.TrimSpace(p["requestId"]))]
	c.rawMu.Unlock()
	if !ok {
		return
	}
	p["requestId"], _ = json.Marshal(s)
	if params, err := json.Marshal(p); err == nil {
		req.Params = params
	}
}

// errNullID is why a request with id null is refused: MCP requests carry a
// string or an integer id, and one that cannot be answered by id would
// otherwise be taken for a notification the peer still waits on.
var errNullID = fmt.Errorf("%w: a request's id may not be null", ErrInvalidMessage)
