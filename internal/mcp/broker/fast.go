package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
	"github.com/harness-dev/harness/internal/mcp/jsonl"
)

// The tools/call fast path, upstream side (issue 35). A call to a process
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

// fastIDPrefix starts the ids of calls forwarded as bytes.
const fastIDPrefix = "harness-fast-"

// errFastClosed is why a call forwarded as bytes failed when the
// upstream's connection ended under it.
var errFastClosed = errors.New("connection closed")

// fastLink is one upstream connection's calls forwarded as bytes.
type fastLink struct {
	conn *jsonl.Conn
	seq  atomic.Uint64

	mu    sync.Mutex
	calls map[string]chan *jsonrpc.Response // by id, calls waiting for their answer
	ended bool

	done chan struct{} // closed when the connection's reading ends
}

func newFastLink(c *jsonl.Conn) *fastLink {
	return &fastLink{conn: c, calls: map[string]chan *jsonrpc.Response{}, done: make(chan struct{})}
}

// deliver hands resp to the call it answers and reports whether it was
// one of the link's (an answer to a call given up on is dropped here).
func (f *fastLink) deliver(resp *jsonrpc.Response) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok || len(id) < len(fastIDPrefix) || id[:len(fastIDPrefix)] != fastIDPrefix {
		return false
	}
	f.mu.Lock()
	ch := f.calls[id]
	delete(f.calls, id)
	f.mu.Unlock()
	if ch != nil {
		ch <- resp // buffered 1, one answer per id
	}
	return true
}

// end fails every call in flight: the connection's reading is over.
func (f *fastLink) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ended {
		f.ended = true
		close(f.done)
	}
}

// call writes one tools/call of tool with args (valid JSON) and waits for
// its answer: the raw result, or the upstream's JSON-RPC error, or why
// there is none (ctx's error, after telling the upstream the call is
// cancelled; errFastClosed; a failed write).
func (f *fastLink) call(ctx context.Context, tool string, args json.RawMessage) (_ json.RawMessage, rpc, err error) {
	id := fastIDPrefix + strconv.FormatUint(f.seq.Add(1), 10)
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, nil, err
	}
	msg := make([]byte, 0, 96+len(id)+len(name)+len(args))
	msg = append(msg, `{"jsonrpc":"2.0","id":"`...)
	msg = append(msg, id...)
	msg = append(msg, `","method":"tools/call","params":{"name":`...)
	msg = append(msg, name...)
	msg = append(msg, `,"arguments":`...)
	msg = append(msg, args...)
	msg = append(msg, `}}`...)

	ch := make(chan *jsonrpc.Response, 1)
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return nil, nil, errFastClosed
	}
	f.calls[id] = ch
	f.mu.Unlock()
	forget := func() {
		f.mu.Lock()
		delete(f.calls, id)
		f.mu.Unlock()
	}
	if err := f.conn.WriteRaw(ctx, msg); err != nil {
		forget()
		return nil, nil, err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, resp.Error, nil
		}
		return resp.Result, nil, nil
	case <-f.done:
		forget()
		return nil, nil, errFastClosed
	case <-ctx.Done():
		forget()
		// As the go-sdk client does: best effort, off the caller's path,
		// so a peer that stopped reading cannot hold the caller.
		reason, _ := json.Marshal(ctx.Err().Error())
		note := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `","reason":` + string(reason) + `}}`)
		go func() { _ = f.conn.WriteRaw(context.Background(), note) }()
		return nil, nil, ctx.Err()
	}
}

// FastResult is the answer of CallFast: Raw, the result object as bytes
// for the session to send on, with ContentBytes the size of its content
// as the call log counts it; or Result when it had to be decoded.
type FastResult struct {
	Raw          json.RawMessage
	ContentBytes int
	Result       *mcp.CallToolResult
}

// CallFast is Call for a call without a progress token, forwarded as bytes
// when the upstream's connection allows it (a process upstream's pipes)
// and through Call's go-sdk client otherwise. Refusals, errors and isError
// results are Call's; permit, the in-flight bound, the call timeout and
// the upstream's requests during the call (WithBack) hold as in Call.
func (b *Broker) CallFast(ctx context.Context, project, name string, args json.RawMessage, permit Permit) (FastResult, error) {
	key, tool, ok := SplitName(name)
	if !ok {
		return FastResult{}, fmt.Errorf("broker: tool %s: no KEY__ namespace: %w", errcode.Quote(name), errcode.ErrUnknownNamespace)
	}
	args, err := callArgs(key, tool, args)
	if err != nil {
		return FastResult{}, err
	}
	r, err := b.resolve(project, name, key, tool, permit)
	if err != nil {
		return FastResult{}, err
	}
	var link *fastLink
	if r.c != nil {
		link = r.c.fast.Load()
	}
	if link == nil {
		res, err := b.callResolved(ctx, r, key, tool, args, nil, nil)
		return FastResult{Result: res}, err
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return FastResult{}, fmt.Errorf("broker: upstream %s: tools/call %s: waiting for a free slot: %w", key, tool, ctx.Err())
	}
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.timeout, &callTimeoutError{key: key, after: r.timeout})
		defer cancel()
	}
	if back, ok := ctx.Value(backKey{}).(Back); ok {
		defer b.inFlight(r.u, back)()
	}
	b.fastCalls.Add(1)
	raw, rpc, err := link.call(ctx, tool, args)
	switch {
	case rpc != nil:
		return FastResult{}, b.callErr(ctx, key, tool, rpc)
	case err != nil:
		return FastResult{}, b.callErr(ctx, key, tool, err)
	}
	return b.fastResult(r.c, key, tool, raw)
}

// FastCalls is how many calls were forwarded as bytes, for tests and the
// bench to tell which path served a call.
func (b *Broker) FastCalls() uint64 { return b.fastCalls.Load() }

// wireResult is what the fast path reads of a result: enough to count its
// content as the call log does and to tell whether it may go on as bytes.
type wireResult struct {
	Content    []wireContent   `json:"content"`
	IsError    bool            `json:"isError"`
	ResultType json.RawMessage `json:"resultType"`
}

type wireContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	URI      string `json:"uri"`
	Resource *struct {
		Text string `json:"text"`
		Blob string `json:"blob"`
	} `json:"resource"`
}

// size is the content's size as the call log counts it (session
// resultBytes): text as is, binary data as its base64.
func (w *wireResult) size() (int, bool) {
	n := 0
	for _, c := range w.Content {
		switch c.Type {
		case "text":
			n += len(c.Text)
		case "image", "audio":
			n += len(c.Data)
		case "resource":
			if c.Resource != nil {
				n += len(c.Resource.Text) + len(c.Resource.Blob)
			}
		case "resource_link":
			n += len(c.URI)
		default:
			return 0, false // the go-sdk refuses it: let it say so
		}
	}
	return n, true
}

// fastResult turns an upstream's raw result into what CallFast returns:
// the bytes (masked) when nothing else must change, the decoded result
// treated as Call treats it otherwise.
func (b *Broker) fastResult(c *conn, key, tool string, raw json.RawMessage) (FastResult, error) {
	var mask func(string) string
	if pt, ok := c.t.(*pipeTransport); ok {
		mask = pt.env.Mask
	}
	var w wireResult
	size, plain := 0, json.Unmarshal(raw, &w) == nil
	if plain {
		size, plain = w.size()
	}
	plain = plain && w.Content != nil && !w.IsError && w.ResultType == nil
	if plain && mask != nil {
		if !plainStrings(raw) {
			plain = false
		} else if clean := mask(string(raw)); clean != string(raw) {
			if !json.Valid([]byte(clean)) {
				return FastResult{}, fmt.Errorf("broker: upstream %s: a result carried a secret and could not be masked: %w", key, errcode.ErrInternal)
			}
			raw = json.RawMessage(clean)
			var masked wireResult
			if json.Unmarshal(raw, &masked) != nil {
				return FastResult{}, fmt.Errorf("broker: upstream %s: a result carried a secret and could not be masked: %w", key, errcode.ErrInternal)
			}
			size, _ = masked.size()
		}
	}
	if plain {
		return FastResult{Raw: raw, ContentBytes: size}, nil
	}
	// What Call does with the go-sdk client's result.
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return FastResult{}, b.callErr(context.Background(), key, tool, fmt.Errorf("calling %q: %w", "tools/call", err))
	}
	if f, ok := c.t.(resultFilter); ok {
		var err error
		if res, err = f.filterResult(key, res); err != nil {
			return FastResult{}, err
		}
	}
	if res.IsError {
		attribute(res, key, tool)
	}
	return FastResult{Result: res}, nil
}

// plainStrings reports whether every string in the JSON text raw is
// written as json.Marshal writes it, using only the escapes \" \\ \n \r
// \t and none of the bytes it escapes (<, >, &, U+2028, U+2029, invalid
// UTF-8). The mask holds each secret as it is and as json.Marshal writes
// it, so only in such text does masking the bytes hide what masking the
// decoded and re-encoded result would.
func plainStrings(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		switch {
		case !in:
			if ch == '"' {
				in = true
			}
		case ch == '"':
			in = false
		case ch == '\\':
			i++
			if i >= len(raw) {
				return false
			}
			switch raw[i] {
			case '"', '\\', 'n', 'r', 't':
			default:
				return false
			}
		case ch == '<' || ch == '>' || ch == '&':
			return false
		case ch >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += size - 1
		}
	}
	return true
}
