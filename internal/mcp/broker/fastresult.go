package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/errcode"
)

// The result of a call forwarded as bytes (fast.go): kept as bytes unless
// something in it must change.

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

// fastResult turns an upstream's raw result into what StartFast ends with:
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
