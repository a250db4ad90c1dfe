package modelapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// anthropic answers POST /v1/messages: an SSE stream of the Messages API
// (message_start, content_block_start/delta/stop, message_delta,
// message_stop), or a JSON message when the request does not stream, or
// an error in the API's error shape.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, req map[string]any, t Turn) {
	w.Header().Set("request-id", s.id("req"))
	if t.Error != nil {
		anthropicError(w, t.Error)
		return
	}
	model, _ := req["model"].(string)
	u := t.usage()
	var blocks []map[string]any
	if t.Text != "" || (t.Shell == "" && t.Tool == "") {
		blocks = append(blocks, map[string]any{"type": "text", "text": t.Text})
	}
	if name, input := anthropicTool(t); name != "" {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": s.id("toolu"), "name": name, "input": input})
	}
	stop := "end_turn"
	if blocks[len(blocks)-1]["type"] == "tool_use" {
		stop = "tool_use"
	}
	usage := map[string]any{
		"input_tokens": u.Input, "output_tokens": u.Output,
		"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite,
	}
	msgID := s.id("msg")
	if stream, _ := req["stream"].(bool); !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := newSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": 1,
			"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite},
	}})
	delta := 0
	for i, b := range blocks {
		if b["type"] == "text" {
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, p := range pieces(t.Text, t.Chunks) {
				if !s.pace(r.Context(), t, delta) {
					return
				}
				delta++
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": p}})
			}
		} else {
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			if !s.pace(r.Context(), t, delta) {
				return
			}
			delta++
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicTool is the tool_use block of a turn: Claude Code's Bash for
// Shell, else Tool.
func anthropicTool(t Turn) (string, map[string]any) {
	switch {
	case t.Shell != "":
		return "Bash", map[string]any{"command": t.Shell, "description": "Run " + t.Shell}
	case t.Tool != "":
		return t.Tool, argsOrEmpty(t.Args)
	}
	return "", nil
}

func argsOrEmpty(a map[string]any) map[string]any {
	if a == nil {
		return map[string]any{}
	}
	return a
}

// anthropicError writes the Messages API's error shape. A usage limit is a
// 429 rate_limit_error carrying the unified rate-limit headers Claude
// Code reads (status rejected, reset as Unix seconds), and told not to
// retry unless Retried.
func anthropicError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	msg := e.Message
	if e.UsageLimit {
		reset := e.ResetAt
		if reset.IsZero() {
			reset = time.Now().Add(time.Hour)
		}
		h := w.Header()
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		h.Set("retry-after", strconv.Itoa(max(1, int(time.Until(reset).Seconds()))))
		if msg == "" {
			msg = "Usage limit reached for your plan · resets " + reset.Local().Format("3:04pm")
		}
	}
	if (status == http.StatusTooManyRequests || e.UsageLimit) && !e.Retried {
		w.Header().Set("x-should-retry", "false")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(max(1, int(e.RetryAfter.Seconds()))))
	}
	jsonError(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
