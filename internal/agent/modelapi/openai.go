package modelapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// openai answers POST /v1/responses with the Responses API's SSE stream
// (response.created, response.output_item.added, response.output_text.delta,
// response.output_item.done, response.completed), or an error.
func (s *Server) openai(w http.ResponseWriter, r *http.Request, req map[string]any, t Turn) {
	if t.Error != nil {
		openaiError(w, t.Error)
		return
	}
	model, _ := req["model"].(string)
	u := t.usage()
	respID := s.id("resp")
	created := time.Now().Unix()
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output, "usage": usage}
	}
	e := newSSE(w)
	seq := 0
	ev := func(name string, body map[string]any) {
		body["type"], body["sequence_number"] = name, seq
		seq++
		e.event(name, body)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	var output []any
	idx, delta := 0, 0
	if t.Text != "" || (t.Shell == "" && t.Tool == "") {
		msgID := s.id("msg")
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, p := range pieces(t.Text, t.Chunks) {
			if !s.pace(r.Context(), t, delta) {
				return
			}
			delta++
			ev("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "delta": p})
		}
		ev("response.output_text.done", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "text": t.Text})
		part := map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}
		ev("response.content_part.done", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "part": part})
		item := map[string]any{"id": msgID, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	if name, args := openaiTool(t); name != "" {
		a, _ := json.Marshal(args)
		item := map[string]any{"id": s.id("fc"), "type": "function_call", "status": "completed",
			"call_id": s.id("call"), "name": name, "arguments": string(a)}
		if ns, n, ok := strings.Cut(name, "/"); ok { // a tool of a namespace (ToolNames)
			item["namespace"], item["name"] = ns, n
		}
		if !s.pace(r.Context(), t, delta) {
			return
		}
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": item})
		ev("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": idx, "arguments": string(a)})
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
	}
	ev("response.completed", map[string]any{"response": resp("completed", output, map[string]any{
		"input_tokens": u.Input + u.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": u.Input + u.CacheRead + u.Output,
	})})
}

// openaiTool is the function call of a turn: Codex's exec_command for
// Shell, asking for escalated permissions so that it asks first, else Tool.
func openaiTool(t Turn) (string, map[string]any) {
	switch {
	case t.Shell != "":
		return "exec_command", map[string]any{"cmd": t.Shell, "justification": "Run " + t.Shell,
			"sandbox_permissions": "require_escalated"}
	case t.Tool != "":
		return t.Tool, argsOrEmpty(t.Args)
	}
	return "", nil
}

// openaiError writes an OpenAI error body. A usage limit is Codex's
// usage_limit_reached with when it resets.
func openaiError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	body := map[string]any{"message": e.Message, "type": "api_error", "code": nil}
	if status == http.StatusTooManyRequests {
		body["type"] = "rate_limit_exceeded"
	}
	if e.UsageLimit {
		reset := e.ResetAt
		if reset.IsZero() {
			reset = time.Now().Add(time.Hour)
		}
		body["type"] = "usage_limit_reached"
		body["plan_type"] = "plus"
		body["resets_at"] = reset.Unix()
		body["resets_in_seconds"] = max(1, int(time.Until(reset).Seconds()))
		if e.Message == "" {
			body["message"] = "The usage limit has been reached"
		}
	}
	jsonError(w, status, map[string]any{"error": body})
}
