package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes for input that is not a message.
const (
	codeParseError     = -32700 // not JSON
	codeInvalidRequest = -32600 // JSON, but not a JSON-RPC 2.0 message
)

// errUnfinished is the reason the peer's last value was not a message:
// its stream ended inside it.
var errUnfinished = errors.New("the stream ended inside a message")

// maxDetail bounds the reason quoted in an error answer: it may carry a
// piece of the peer's input (a bad "jsonrpc" value), which is never echoed
// at length.
const maxDetail = 160

// answerInvalid writes the error response to a line that was not a
// message (why says how), with id null since none could be read.
func (c *Conn) answerInvalid(why error) error {
	code, text := codeInvalidRequest, "Invalid Request"
	var se *json.SyntaxError
	if errors.As(why, &se) || errors.Is(why, errUnfinished) {
		code, text = codeParseError, "Parse error"
	}
	detail := strings.TrimPrefix(strings.TrimPrefix(why.Error(), "jsonl: "), strings.TrimPrefix(ErrInvalidMessage.Error(), "jsonl: ")+": ")
	if len(detail) > maxDetail {
		cut := maxDetail
		for cut > 0 && !utf8.RuneStart(detail[cut]) {
			cut--
		}
		detail = detail[:cut] + "…"
	}
	return c.writeError([]byte("null"), code, text+": "+detail)
}

// writeError writes one error response for id (raw JSON), under writeMu.
// A failed write ends the connection's wait for answers it owes.
func (c *Conn) writeError(id []byte, code int, message string) error {
	msg, err := json.Marshal(message)
	if err != nil {
		return fmt.Errorf("jsonl: encoding an error answer: %w", err)
	}
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, msg)
	c.writeMu.Lock()
	_, err = c.ww.Write(line)
	c.writeMu.Unlock()
	if err != nil {
		c.answered(nil, true)
		return fmt.Errorf("jsonl: write: %w", err)
	}
	return nil
}
