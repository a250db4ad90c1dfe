package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeReference is the straightforward decoder decode replaced (a map of
// raw members through encoding/json), kept as the oracle of FuzzDecode.
// It turns one JSON-RPC object into a Request or a Response, keeping
// params, result and error data raw.
func decodeReference(data []byte) (jsonrpc.Message, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	var version string
	if err := json.Unmarshal(env[keyVersion], &version); err != nil || version != "2.0" {
		return nil, fmt.Errorf("%w: jsonrpc version %s, want \"2.0\"", ErrInvalidMessage, env[keyVersion])
	}
	var rawID any
	if raw, ok := env[keyID]; ok {
		if err := json.Unmarshal(raw, &rawID); err != nil {
			return nil, fmt.Errorf("%w: id: %v", ErrInvalidMessage, err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if raw, ok := env[keyMethod]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, fmt.Errorf("%w: method: %v", ErrInvalidMessage, err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: env[keyParams]}, nil
	}
	if !id.IsValid() {
		return nil, fmt.Errorf("%w: a response without an id", ErrInvalidMessage)
	}
	_, hasResult := env[keyResult]
	_, hasError := env[keyError]
	if !hasResult && !hasError {
		return nil, fmt.Errorf("%w: neither a method nor a result or error", ErrInvalidMessage)
	}
	resp := &jsonrpc.Response{ID: id, Result: env[keyResult]}
	if raw, ok := env[keyError]; ok && !bytes.Equal(raw, []byte("null")) {
		var we jsonrpc.Error
		if err := json.Unmarshal(raw, &we); err != nil {
			return nil, fmt.Errorf("%w: error: %v", ErrInvalidMessage, err)
		}
		resp.Error = &we
	}
	return resp, nil
}
