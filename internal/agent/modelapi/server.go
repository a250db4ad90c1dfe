// Package modelapi is a scripted model API server for tests: it speaks the
// wire formats the agent CLIs use (Anthropic Messages with SSE, OpenAI
// Responses with SSE, OpenAI Chat Completions with SSE, Gemini
// generateContent and streamGenerateContent with SSE) on 127.0.0.1, answers each agent's main
// requests from a script of turns the test writes, and records every
// request so a test can assert what the agent sent (agents-offline.md).
//
// It is a non-test package so that tests of any package can import it;
// nothing in the daemon does.
//
// Which requests take a turn: a request that carries tools (an agent's
// conversation turn) takes the next scripted Turn; requests without tools
// (titles, topic checks, Gemini's routing and next-speaker calls) are
// side calls, answered with DefaultText or, when they ask for JSON with a
// schema, with a value that fits the schema. With the script empty a
// main request is answered with DefaultText too.
package modelapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// API names which wire format a request used.
type API string

// The wire formats served.
const (
	Anthropic API = "anthropic" // POST /v1/messages
	OpenAI    API = "openai"    // POST /v1/responses
	Gemini    API = "gemini"    // POST /v1beta/models/M:generateContent | :streamGenerateContent
	Chat      API = "chat"      // POST /v1/chat/completions
)

// DefaultText answers side calls and main calls past the end of the script.
const DefaultText = "OK."

// Turn is one scripted answer to a main request.
type Turn struct {
	// Text is the assistant's answer (after Tool's call when both are set).
	Text string
	// Shell asks the agent to run this shell command with its own shell
	// tool (Claude Code's Bash, Codex's exec_command with escalation, so it
	// asks; Gemini CLI's run_shell_command; a Chat Completions agent's
	// shell tool as its request declares it).
	Shell string
	// Tool calls a tool by name with Args: for an MCP tool, the name the
	// agent gave it in its request's tools (see ToolName).
	Tool string
	Args map[string]any
	// Error answers with an HTTP error instead of a stream.
	Error *Error
	// Chunks splits Text into that many deltas (default 1), with Delay
	// before each: a slow stream.
	Chunks int
	Delay  time.Duration
	// Hold, when set, keeps the stream open after its first delta until
	// it is closed (or the server closes): the agent is working.
	Hold <-chan struct{}
	// Usage is reported with the answer; zero reports 10 in, 5 out.
	Usage Usage
	// Until, when set, makes the turn answer every main request until
	// it is closed (an agent that retries a usage limit by itself);
	// then the script goes on.
	Until <-chan struct{}
}

// Usage is the token counts a turn reports.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
}

// Error is an HTTP error answer.
type Error struct {
	Status  int    // e.g. 429
	Message string // the provider's error message
	// UsageLimit makes a 429 a usage-limit answer in the provider's own
	// shape, resetting at ResetAt (Codex: usage_limit_reached with
	// resets_at/resets_in_seconds; Claude: rate_limit_error with the
	// unified rate-limit headers; Gemini: RESOURCE_EXHAUSTED with a
	// per-day QuotaFailure and RetryInfo).
	UsageLimit bool
	ResetAt    time.Time
	// RetryAfter, when set, says so in the answer's retry-after-ms
	// header (Chat Completions) or retry-after (Messages API, in whole
	// seconds): an agent that retries a 429 by itself (Cline, six times;
	// Claude Code, ten) waits that long between tries instead of its own
	// backoff (two minutes in all for Cline).
	RetryAfter time.Duration
	// Retried leaves a 429 to the agent's own retries: no x-should-retry
	// "false" (Claude Code 2.1.328 then retries it ten times, showing
	// "retrying in 2s · attempt 3/10").
	Retried bool
}

// Request is one recorded request.
type Request struct {
	Time   time.Time
	API    API // "" for other paths (HEAD /api/hello)
	Method string
	Path   string // with its query
	Header http.Header
	Body   []byte
	// Main is set when the request took (or would have taken) a turn.
	Main bool
	// Turn is the index of the scripted turn it got, -1 for none.
	Turn int
}

// JSON decodes the body into a generic map (nil when it is not JSON).
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Server is a running scripted model API.
type Server struct {
	// URL is http://127.0.0.1:PORT, without a trailing slash.
	URL string

	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu      sync.Mutex
	script  []Turn
	next    int
	reqs    []Request
	changed chan struct{} // closed and replaced at every request
	ids     int
}

// Start serves on a new loopback port until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modelapi: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, done: make(chan struct{}), changed: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server: held streams end, connections close.
func (s *Server) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Script appends turns to the script.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Used is how many scripted turns have been taken.
func (s *Server) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Requests returns every request so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequest waits until a request after the first `after` ones matches
// ok and returns it with its index.
func (s *Server) WaitRequest(ctx context.Context, after int, ok func(Request) bool) (Request, int, error) {
	for {
		s.mu.Lock()
		for i := after; i < len(s.reqs); i++ {
			if ok(s.reqs[i]) {
				r := s.reqs[i]
				s.mu.Unlock()
				return r, i, nil
			}
		}
		after = len(s.reqs)
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Request{}, 0, fmt.Errorf("modelapi: no such request: %w", ctx.Err())
		}
	}
}

// MainRequests returns the requests that took turns.
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

// take returns the next turn for a main request, or a default one.
func (s *Server) take() (Turn, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.next < len(s.script) {
		t := s.script[s.next]
		if t.Until != nil {
			select {
			case <-t.Until:
				s.next++ // over: the script goes on
				continue
			default:
				return t, s.next // again, until it is closed
			}
		}
		s.next++
		return t, s.next - 1
	}
	return Turn{Text: DefaultText}, -1
}

func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_%06d", prefix, s.ids)
}

// maxBody bounds a recorded request body.
const maxBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	req := Request{Time: time.Now(), Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body, Turn: -1}
	path := r.URL.Path
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	switch {
	case strings.HasSuffix(path, "/v1/messages") && r.Method == http.MethodPost:
		req.API = Anthropic
	case strings.HasSuffix(path, "/chat/completions") && r.Method == http.MethodPost:
		req.API = Chat
	case strings.HasSuffix(path, "/responses") && r.Method == http.MethodPost:
		req.API = OpenAI
	case strings.Contains(path, "/models/") && (strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent")):
		req.API = Gemini
	}
	var turn Turn
	if req.API != "" && hasTools(req.API, m) {
		req.Main = true
		turn, req.Turn = s.take()
	} else {
		turn = Turn{Text: DefaultText}
	}
	s.record(req)
	switch req.API {
	case Anthropic:
		s.anthropic(w, r, m, turn)
	case OpenAI:
		s.openai(w, r, m, turn)
	case Gemini:
		s.gemini(w, r, m, turn, strings.HasSuffix(path, ":streamGenerateContent"))
	case Chat:
		s.chat(w, r, m, turn)
	default:
		if strings.HasSuffix(path, "/models") && r.Method == http.MethodGet {
			// The model list OpenAI-compatible agents ask for.
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
				map[string]any{"id": ChatModel, "object": "model", "created": 1700000000, "owned_by": "harness-test"}}})
			return
		}
		// HEAD /api/hello (Claude Code's connectivity check) and
		// anything else: an empty success.
		w.WriteHeader(http.StatusOK)
	}
}

// hasTools reports whether a request body declares tools (a main turn).
func hasTools(api API, m map[string]any) bool {
	t, _ := m["tools"].([]any)
	return len(t) > 0
}

// sse writes server-sent events, flushing after each.
type sse struct {
	w  http.ResponseWriter
	f  http.Flusher
	ok bool
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, ok: true}
}

// done ends a Chat Completions stream.
func (e *sse) done() {
	if !e.ok {
		return
	}
	if _, err := io.WriteString(e.w, "data: [DONE]\n\n"); err != nil {
		e.ok = false
		return
	}
	if e.f != nil {
		e.f.Flush()
	}
}

// event writes one event; name "" writes a bare data line (Gemini).
func (e *sse) event(name string, data any) {
	if !e.ok {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // our own values
	}
	var buf bytes.Buffer
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		e.ok = false
		return
	}
	if e.f != nil {
		e.f.Flush()
	}
}

// pieces splits text into n deltas.
func pieces(text string, n int) []string {
	if n <= 1 || len(text) < 2 {
		return []string{text}
	}
	rs := []rune(text)
	n = min(n, len(rs))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(rs[i*len(rs)/n:(i+1)*len(rs)/n]))
	}
	return out
}

// pace waits before a delta (Delay), and after the first one for Hold.
// It reports false when the server or the request ended.
func (s *Server) pace(ctx context.Context, t Turn, i int) bool {
	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	if i == 1 && t.Hold != nil {
		select {
		case <-t.Hold:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	return true
}

// usage returns the turn's usage with its default.
func (t Turn) usage() Usage {
	if t.Usage == (Usage{}) {
		return Usage{Input: 10, Output: 5}
	}
	return t.Usage
}

func jsonError(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// ErrNoTool is returned by ToolName when the request declares no such tool.
var ErrNoTool = errors.New("modelapi: the request declares no such tool")

// ToolNames lists the names of the tools a recorded request declares, in
// any of the three formats. A tool inside an OpenAI namespace (how Codex
// offers an MCP server's tools) is "NAMESPACE/NAME"; a Turn calling it by
// that name calls it in its namespace.
func (r Request) ToolNames() []string {
	m := r.JSON()
	var out []string
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		n, _ := tm["name"].(string)
		if fn, ok := tm["function"].(map[string]any); ok && n == "" { // OpenAI Chat Completions
			n, _ = fn["name"].(string)
		}
		if sub, ok := tm["tools"].([]any); ok && tm["type"] == "namespace" { // OpenAI: Codex's MCP servers
			for _, st := range sub {
				sm, _ := st.(map[string]any)
				if sn, ok := sm["name"].(string); ok {
					out = append(out, n+"/"+sn)
				}
			}
		} else if n != "" {
			out = append(out, n)
		}
		if decls, ok := tm["functionDeclarations"].([]any); ok { // Gemini
			for _, d := range decls {
				dm, _ := d.(map[string]any)
				if n, ok := dm["name"].(string); ok {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// ToolName returns the first tool name the request declares that ends in
// suffix ("harness_list" finds mcp__harness__harness_list).
func (r Request) ToolName(suffix string) (string, error) {
	for _, n := range r.ToolNames() {
		if strings.HasSuffix(n, suffix) {
			return n, nil
		}
	}
	return "", fmt.Errorf("%w: *%s (has %v)", ErrNoTool, suffix, r.ToolNames())
}
