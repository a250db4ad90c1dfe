package modelapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// chat answers POST /v1/chat/completions, the OpenAI Chat Completions API
// that opencode, Qwen Code, Cline, Copilot CLI and pi speak to an
// OpenAI-compatible provider: chat.completion.chunk events (delta.content,
// delta.tool_calls, finish_reason), a usage chunk, then [DONE]; or one
// chat.completion object when the request does not stream.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, req map[string]any, t Turn) {
	if t.Error != nil {
		chatError(w, t.Error)
		return
	}
	model, _ := req["model"].(string)
	u := t.usage()
	id, created := s.id("chatcmpl"), time.Now().Unix()
	usage := map[string]any{"prompt_tokens": u.Input + u.CacheRead, "completion_tokens": u.Output,
		"total_tokens":          u.Input + u.CacheRead + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead}}
	var calls []any
	if name, args := chatTool(req, t); name != "" {
		a, _ := json.Marshal(args)
		calls = append(calls, map[string]any{"index": 0, "id": s.id("call"), "type": "function",
			"function": map[string]any{"name": name, "arguments": string(a)}})
	}
	finish := "stop"
	if calls != nil {
		finish = "tool_calls"
	}
	if stream, _ := req["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": t.Text}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	delta := 0
	if t.Text != "" {
		for _, p := range pieces(t.Text, t.Chunks) {
			if !s.pace(r.Context(), t, delta) {
				return
			}
			delta++
			e.event("", chunk(map[string]any{"content": p}, nil))
		}
	}
	if calls != nil {
		if !s.pace(r.Context(), t, delta) {
			return
		}
		e.event("", chunk(map[string]any{"tool_calls": calls}, nil))
	}
	e.event("", chunk(map[string]any{}, finish))
	e.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
		"choices": []any{}, "usage": usage})
	e.done()
}

// shellTools are the names the Chat Completions agents give their shell
// tool, best first.
var shellTools = []string{"bash", "run_shell_command", "run_commands", "execute_command", "shell"}

// chatTool is the function call of a turn: for Shell, the agent's own
// shell tool as its request declares it (name and required fields), else
// Tool with Args.
func chatTool(req map[string]any, t Turn) (string, map[string]any) {
	if t.Tool != "" {
		return t.Tool, argsOrEmpty(t.Args)
	}
	if t.Shell == "" {
		return "", nil
	}
	tools, _ := req["tools"].([]any)
	best, name := len(shellTools), ""
	var params map[string]any
	for _, tv := range tools {
		tm, _ := tv.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		n, _ := fn["name"].(string)
		if i := slices.Index(shellTools, n); i >= 0 && i < best {
			best, name = i, n
			params, _ = fn["parameters"].(map[string]any)
		}
	}
	if name == "" {
		return "bash", map[string]any{"command": t.Shell}
	}
	return name, shellArgs(params, t.Shell)
}

// shellArgs fills a shell tool's schema: its command (a string, or a list
// of one) and every other required field with a value of its type.
func shellArgs(schema map[string]any, cmd string) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	set := func(k string) {
		p, _ := props[k].(map[string]any)
		switch {
		case k == "command" || k == "commands" || k == "cmd":
			if p["type"] == "array" {
				out[k] = []any{cmd}
			} else {
				out[k] = cmd
			}
		case k == "description" || k == "justification":
			out[k] = "Run " + cmd
		default:
			out[k] = fit(p)
		}
	}
	for _, k := range []string{"command", "commands", "cmd", "description"} {
		if _, ok := props[k]; ok {
			set(k)
		}
	}
	req, _ := schema["required"].([]any)
	for _, k := range req {
		if ks, _ := k.(string); ks != "" {
			if _, done := out[ks]; !done {
				set(ks)
			}
		}
	}
	if len(out) == 0 {
		out["command"] = cmd
	}
	return out
}

// chatError writes an OpenAI error body. A usage limit is
// insufficient_quota with the reset in its message and no retry-after
// (as OpenAI answers an exhausted quota), told not to retry unless
// Retried; several agents retry it all the same.
func chatError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	body := map[string]any{"message": e.Message, "type": "api_error", "code": nil, "param": nil}
	if status == http.StatusTooManyRequests {
		body["type"], body["code"] = "rate_limit_exceeded", "rate_limit_exceeded"
	}
	if e.UsageLimit {
		reset := e.ResetAt
		if reset.IsZero() {
			reset = time.Now().Add(time.Hour)
		}
		body["type"], body["code"] = "insufficient_quota", "insufficient_quota"
		if e.Message == "" {
			body["message"] = "You exceeded your current quota, please check your plan and billing details. Usage limit reached, resets " +
				reset.Local().Format("3:04pm") + "."
		}
	}
	if !e.Retried {
		w.Header().Set("x-should-retry", "false")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("retry-after-ms", strconv.FormatInt(e.RetryAfter.Milliseconds(), 10))
	}
	jsonError(w, status, map[string]any{"error": body})
}

// ChatModel is the model GET /v1/models lists, for the Chat Completions
// agents configured against the server.
const ChatModel = "test-model"
