package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The envelope is split by hand because it is on every message: decoding
// it into a map of raw members through encoding/json was an eighth of the
// daemon's CPU per proxied call. The text is validated once (json.Valid),
// then the object's members are cut out by a scanner that may assume
// valid JSON; only small member values go through encoding/json.

// envelope keys, matched exactly.
const (
	keyVersion = "jsonrpc"
	keyID      = "id"
	keyMethod  = "method"
	keyParams  = "params"
	keyResult  = "result"
	keyError   = "error"
)

// envelope holds the raw values of the members decode cares about; nil
// means absent. They alias the input.
type envelope struct {
	version, id, method, params, result, err []byte
}

// decode is decodeRaw for a connection: a request with id null is
// refused, and a call whose id the SDK would not write back as it came
// gets a stand-in (rawid.go).
func (c *Conn) decode(data []byte) (jsonrpc.Message, error) {
	msg, rawID, err := decodeRaw(data)
	if err != nil {
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if rawID != nil && !req.ID.IsValid() {
			return nil, errNullID
		}
		c.standInFor(req, rawID)
		c.standInOfCancelled(req)
	}
	return msg, nil
}

// decode turns one JSON-RPC object into a Request or a Response, keeping
// params, result and error data raw (copied: data is a reused buffer).
func decode(data []byte) (jsonrpc.Message, error) {
	msg, _, err := decodeRaw(data)
	return msg, err
}

// decodeRaw is decode that also returns the raw id (nil when absent; it
// aliases data).
func decodeRaw(data []byte) (jsonrpc.Message, []byte, error) {
	if !json.Valid(data) {
		var v struct{}
		err := json.Unmarshal(data, &v) // the syntax error, for the caller and for incomplete()
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if data[0] != '{' {
		return nil, nil, fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	}
	env, err := splitEnvelope(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if !bytes.Equal(env.version, []byte(`"2.0"`)) {
		var version string
		if err := json.Unmarshal(env.version, &version); err != nil || version != "2.0" {
			return nil, nil, fmt.Errorf("%w: jsonrpc version %s, want \"2.0\"", ErrInvalidMessage, env.version)
		}
	}
	var rawID any
	if env.id != nil {
		if rawID, err = scalar(env.id); err != nil {
			return nil, nil, fmt.Errorf("%w: id: %v", ErrInvalidMessage, err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if env.method != nil {
		var method string
		if !bytes.Equal(env.method, []byte("null")) {
			m, err := scalar(env.method)
			s, ok := m.(string)
			if err != nil || !ok {
				return nil, nil, fmt.Errorf("%w: method: %s is not a string", ErrInvalidMessage, env.method)
			}
			method = s
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: clone(env.params)}, env.id, nil
	}
	if !id.IsValid() {
		return nil, nil, fmt.Errorf("%w: a response without an id", ErrInvalidMessage)
	}
	if env.result == nil && env.err == nil {
		return nil, nil, fmt.Errorf("%w: neither a method nor a result or error", ErrInvalidMessage)
	}
	resp := &jsonrpc.Response{ID: id, Result: clone(env.result)}
	if env.err != nil && !bytes.Equal(env.err, []byte("null")) {
		var we jsonrpc.Error
		if err := json.Unmarshal(env.err, &we); err != nil {
			return nil, nil, fmt.Errorf("%w: error: %v", ErrInvalidMessage, err)
		}
		resp.Error = &we
	}
	return resp, env.id, nil
}

// clone copies raw out of the reused read buffer; nil stays nil.
func clone(raw []byte) json.RawMessage {
	if raw == nil {
		return nil
	}
	return append(json.RawMessage(nil), raw...)
}

// scalar decodes a small value as encoding/json would into an any: the
// common plain strings and numbers directly, the rest through it.
func scalar(raw []byte) (any, error) {
	switch {
	case len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw):
		return string(raw[1 : len(raw)-1]), nil
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f, nil
		}
	}
	var v any
	err := json.Unmarshal(raw, &v)
	return v, err
}

// splitEnvelope cuts the members of a valid JSON object out of data. A
// repeated key keeps its last value, as encoding/json does.
func splitEnvelope(data []byte) (envelope, error) {
	var env envelope
	i := skipSpace(data, 1) // past '{'
	for i < len(data) && data[i] != '}' {
		keyEnd := stringEnd(data, i)
		key := data[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(data[i:keyEnd], &k); err != nil {
				return env, err
			}
			key = []byte(k)
		}
		i = skipSpace(data, keyEnd)
		i = skipSpace(data, i+1) // past ':'
		end := valueEnd(data, i)
		value := data[i:end]
		switch string(key) {
		case keyVersion:
			env.version = value
		case keyID:
			env.id = value
		case keyMethod:
			env.method = value
		case keyParams:
			env.params = value
		case keyResult:
			env.result = value
		case keyError:
			env.err = value
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return env, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// valueEnd returns the index just past the value starting at data[i].
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = stringEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	default: // number, true, false, null
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return j
			}
			j++
		}
		return j
	}
}

// Decode decodes one JSON-RPC message held whole (an HTTP body), as a
// connection decodes what it reads: the envelope cut by hand, params,
// result and error kept raw (copied). raw is the id as written (nil when
// absent), to tell whether the id EncodeID writes is the peer's.
func Decode(data []byte) (msg jsonrpc.Message, raw []byte, err error) {
	return decodeRaw(data)
}

// EncodeID is id as an answer writes it, or nil for an id that is not a
// string or an integer.
func EncodeID(id jsonrpc.ID) []byte { return canonical(id) }
