package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// skipOversized reads past the rest of a message that outgrew the limit
// (its first bytes are in c.line) without keeping it, and returns its size,
// its top-level "id" (raw JSON, nil when it has none or it was not seen)
// and whether it has a top-level "method" (a request, not an answer). It
// reads until the message's value closes at a line's end, so a
// pretty-printed message is skipped whole. The id is caught on the fly:
// the TypeScript SDK writes it after params, past the limit.
func (c *Conn) skipOversized() (size int, id []byte, isCall bool, err error) {
	var s idScanner
	s.feed(c.line)
	c.long.Each(s.feed)
	size = len(c.line) + c.long.Len()
	c.line = c.line[:0]
	c.long.Reset()
	chunk, rerr := c.over, c.overErr // the piece that broke the limit
	c.over = nil
	for {
		size += len(chunk)
		s.feed(chunk)
		switch {
		case rerr == nil && s.closed():
			return size, s.id, s.method, nil
		case errors.Is(rerr, bufio.ErrBufferFull), rerr == nil:
		default:
			return size, s.id, s.method, rerr
		}
		chunk, rerr = c.r.ReadSlice('\n')
	}
}

// answerOversized tells the peer its message of size bytes was not read:
// an Invalid Request error for its id when one was seen (so a client
// waiting on that call gets its answer), else for id null.
func (c *Conn) answerOversized(size int, id []byte) error {
	if id == nil || !validID(id) {
		id = []byte("null")
	}
	return c.writeError(id, codeInvalidRequest, fmt.Sprintf("Invalid Request: a message of %d bytes exceeds this session's limit of %d bytes", size, c.limit))
}

// validID accepts what JSON-RPC allows as an id: a string or a number.
func validID(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > 128 || !json.Valid(raw) {
		return false
	}
	return raw[0] == '"' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')
}

// idScanner follows a JSON object fed in pieces, as valueScanner does, and
// keeps the raw value of its top-level "id" member.
type idScanner struct {
	valueScanner
	key      []byte // the top-level string being read, while short
	keyLong  bool
	lastKey  string // the last complete top-level string
	inValue  bool   // reading the value of a top-level "id"
	valueBuf []byte
	id       []byte
	method   bool // a top-level "method" member was seen
}

func (s *idScanner) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		if s.inString && !s.escape && !s.inValue && s.depth > 1 {
			// Deep inside a string (most of a large result): nothing
			// matters until its next quote or escape.
			j := bytes.IndexAny(b[i:], `"\\`)
			if j < 0 {
				return
			}
			i += j
		}
		ch := b[i]
		topLevel := s.depth == 1
		wasString := s.inString
		if s.inValue {
			if topLevel && !s.inString && (ch == ',' || ch == '}') {
				s.id, s.inValue = bytes.TrimSpace(s.valueBuf), false
			} else if len(s.valueBuf) < 130 {
				s.valueBuf = append(s.valueBuf, ch)
			}
		}
		s.valueScanner.feed([]byte{ch})
		switch {
		case topLevel && !wasString && s.inString && !s.inValue:
			s.key, s.keyLong = s.key[:0], false
		case topLevel && wasString && s.inString && !s.inValue:
			if len(s.key) < 8 {
				s.key = append(s.key, ch)
			} else {
				s.keyLong = true
			}
		case topLevel && wasString && !s.inString && !s.inValue:
			s.lastKey = ""
			if !s.keyLong {
				s.lastKey = string(s.key)
			}
		case topLevel && !s.inString && ch == ':' && s.lastKey == "id" && s.id == nil:
			s.inValue, s.valueBuf = true, s.valueBuf[:0]
		case topLevel && !s.inString && ch == ':' && s.lastKey == "method":
			s.method = true
		}
	}
}

// closed reports whether the value fed so far has closed.
func (s *idScanner) closed() bool { return s.depth <= 0 && !s.inString }

// CodeTooLarge is the JSON-RPC error code of the answer Read hands on in
// place of a response over the limit (Transport.RefuseOversized): in the
// implementation-defined server error range, so a caller can tell "the
// answer was too large to take" from the peer's own errors.
const CodeTooLarge = -32090

// refusedAnswer is the error response that stands in for a response of
// size bytes that was skipped, for its id; nil when no usable id was seen
// (nobody can be told, and nothing is handed on).
func (c *Conn) refusedAnswer(size int, id []byte) jsonrpc.Message {
	if id == nil || !validID(id) {
		return nil
	}
	m, err := c.decode(TooLargeAnswer(id, size, c.limit))
	if err != nil {
		return nil
	}
	return m
}

// TooLargeAnswer is the error response (CodeTooLarge) that stands in for
// an answer of size bytes, over limit, to the call id (raw JSON).
func TooLargeAnswer(id []byte, size, limit int) []byte {
	msg, _ := json.Marshal(fmt.Sprintf("the answer of %d bytes exceeds the limit of %d bytes", size, limit))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, CodeTooLarge, msg)
}

// IDScanner follows a JSON-RPC message fed to it in pieces, without
// keeping it, for what an answer to it needs: its top-level id and
// whether it is a request.
type IDScanner struct{ s idScanner }

// Feed scans the next piece of the message.
func (s *IDScanner) Feed(b []byte) { s.s.feed(b) }

// ID is the message's top-level id as written, nil when none was seen or
// it is not a string or a number.
func (s *IDScanner) ID() []byte {
	if s.s.id == nil || !validID(s.s.id) {
		return nil
	}
	return s.s.id
}

// Request reports whether the message has a top-level method.
func (s *IDScanner) Request() bool { return s.s.method }
