package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// skipOversized reads past the rest of a message that outgrew the limit
// (its first bytes are in c.line) without keeping it, and returns its size
// and its top-level "id" (raw JSON, nil when it has none or it was not
// seen). It reads until the message's value closes at a line's end, so a
// pretty-printed message is skipped whole. The id is caught on the fly:
// the TypeScript SDK writes it after params, past the limit.
func (c *Conn) skipOversized() (size int, id []byte, err error) {
	var s idScanner
	s.feed(c.line)
	size = len(c.line)
	c.line = c.line[:0]
	chunk, rerr := c.over, c.overErr // the piece that broke the limit
	c.over = nil
	for {
		size += len(chunk)
		s.feed(chunk)
		switch {
		case rerr == nil && s.closed():
			return size, s.id, nil
		case errors.Is(rerr, bufio.ErrBufferFull), rerr == nil:
		default:
			return size, s.id, rerr
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
}

func (s *idScanner) feed(b []byte) {
	for _, ch := range b {
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
		}
	}
}

// closed reports whether the value fed so far has closed.
func (s *idScanner) closed() bool { return s.depth <= 0 && !s.inString }
