package modelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// gemini answers generateContent (one GenerateContentResponse as JSON) and
// streamGenerateContent?alt=sse (data lines, each a GenerateContentResponse).
// A side call that asks for JSON (generationConfig.responseMimeType
// application/json with a schema, as Gemini CLI's router does) gets a
// value fitting the schema as its text.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, req map[string]any, t Turn, stream bool) {
	if t.Error != nil {
		geminiError(w, t.Error)
		return
	}
	u := t.usage()
	usage := map[string]any{"promptTokenCount": u.Input + u.CacheRead, "candidatesTokenCount": u.Output,
		"cachedContentTokenCount": u.CacheRead, "totalTokenCount": u.Input + u.CacheRead + u.Output}
	text := t.Text
	if gc, _ := req["generationConfig"].(map[string]any); gc != nil && t.Shell == "" && t.Tool == "" {
		if mt, _ := gc["responseMimeType"].(string); mt == "application/json" {
			schema, _ := gc["responseJsonSchema"].(map[string]any)
			if schema == nil {
				schema, _ = gc["responseSchema"].(map[string]any)
			}
			b, _ := json.Marshal(fit(schema))
			text = string(b)
		}
	}
	model := "gemini"
	if i := len("/v1beta/models/"); len(r.URL.Path) > i {
		model = r.URL.Path[i:]
		for j := range len(model) {
			if model[j] == ':' {
				model = model[:j]
				break
			}
		}
	}
	candidate := func(parts []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{c}, "usageMetadata": usage, "modelVersion": model, "responseId": s.id("resp")}
	}
	var call []any
	if name, args := geminiTool(t); name != "" {
		call = []any{map[string]any{"functionCall": map[string]any{"name": name, "args": args}}}
	}
	if !stream {
		parts := []any{}
		if text != "" || call == nil {
			parts = append(parts, map[string]any{"text": text})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(candidate(append(parts, call...), "STOP"))
		return
	}
	e := newSSE(w)
	delta := 0
	if text != "" || call == nil {
		ps := pieces(text, t.Chunks)
		for i, p := range ps {
			if !s.pace(r.Context(), t, delta) {
				return
			}
			delta++
			finish := ""
			if i == len(ps)-1 && call == nil {
				finish = "STOP"
			}
			e.event("", candidate([]any{map[string]any{"text": p}}, finish))
		}
	}
	if call != nil {
		if !s.pace(r.Context(), t, delta) {
			return
		}
		e.event("", candidate(call, "STOP"))
	}
}

// geminiTool is the function call of a turn: Gemini CLI's
// run_shell_command for Shell, else Tool.
func geminiTool(t Turn) (string, map[string]any) {
	switch {
	case t.Shell != "":
		return "run_shell_command", map[string]any{"command": t.Shell, "description": "Run " + t.Shell}
	case t.Tool != "":
		return t.Tool, argsOrEmpty(t.Args)
	}
	return "", nil
}

// geminiError writes a google.rpc.Status error. A usage limit is
// RESOURCE_EXHAUSTED with a per-day QuotaFailure (which Gemini CLI takes
// as terminal, not to be retried) and a RetryInfo delay to the reset.
func geminiError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	grpc := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
		404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[status]
	body := map[string]any{"code": status, "message": e.Message, "status": grpc}
	if e.UsageLimit {
		reset := e.ResetAt
		if reset.IsZero() {
			reset = time.Now().Add(time.Hour)
		}
		secs := max(1, int(time.Until(reset).Seconds()))
		if e.Message == "" {
			body["message"] = "You exceeded your current quota, please check your plan and billing details."
		}
		body["details"] = []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.Itoa(secs) + "s"},
		}
	}
	jsonError(w, status, map[string]any{"error": body})
}

// fit returns a value of the JSON schema's shape: the first enum value, a
// string, the minimum of a number, objects with every property.
func fit(schema map[string]any) any {
	if schema == nil {
		return map[string]any{}
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ := fmt.Sprint(schema["type"])
	switch typ {
	case "object", "OBJECT":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			ps, _ := v.(map[string]any)
			out[k] = fit(ps)
		}
		return out
	case "array", "ARRAY":
		items, _ := schema["items"].(map[string]any)
		return []any{fit(items)}
	case "integer", "INTEGER", "number", "NUMBER":
		if m, ok := schema["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean", "BOOLEAN":
		return false
	default:
		return "simple"
	}
}
