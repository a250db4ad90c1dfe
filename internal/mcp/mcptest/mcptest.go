// Package mcptest holds the fakes the MCP packages' tests share: the
// control operations a session calls (Ops), the authority that resolves
// tokens and grants (Auth), the facade's tool names by class, and the
// names a session lists (ToolNames). It is
// imported by tests only.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/mcp/facade"
)

// Call is one control call Ops received.
type Call struct {
	Caller api.Caller
	Op     string
	Args   string
}

// Ops is a fake of the control operations: it records every call and
// answers {"op": OP} unless told otherwise. Ops listed in Block wait until
// their channel is closed (or the call's context ends) and announce
// themselves on Started; every call first takes Delay.
type Ops struct {
	mu      sync.Mutex
	calls   []Call
	Results map[string]any
	Errs    map[string]error
	Block   map[string]chan struct{}
	Started chan string
	Delay   time.Duration
}

// NewOps returns an Ops with empty tables.
func NewOps() *Ops {
	return &Ops{Results: map[string]any{}, Errs: map[string]error{}, Block: map[string]chan struct{}{}, Started: make(chan string, 16)}
}

// Call implements the session's Ops.
func (f *Ops) Call(ctx context.Context, caller api.Caller, op string, args json.RawMessage) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, Call{caller, op, string(args)})
	res, err, block, delay := f.Results[op], f.Errs[op], f.Block[op], f.Delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if block != nil {
		f.Started <- op
		select {
		case <-block:
		case <-ctx.Done():
			return nil, fmt.Errorf("fake %s: %w", op, ctx.Err())
		}
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return map[string]any{"op": op}, nil
	}
	return res, nil
}

// SetDelay makes every later call take d.
func (f *Ops) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Delay = d
}

// Recorded returns the calls so far.
func (f *Ops) Recorded() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Callers returns who made each call so far.
func (f *Ops) Callers() []api.Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]api.Caller, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.Caller
	}
	return out
}

// Auth is a fake token registry and live configuration: tokens map to
// harnesses, harnesses have an mcp_allow and a project, and the operator
// has a grant (the default one unless set).
type Auth struct {
	mu       sync.Mutex
	tokens   map[string]string
	allowed  map[string][]string
	projects map[string]string
	operator []string
}

// NewAuth returns an Auth that knows nobody.
func NewAuth() *Auth {
	return &Auth{tokens: map[string]string{}, allowed: map[string][]string{}, projects: map[string]string{}}
}

// ResolveToken implements the session's Authority.
func (a *Auth) ResolveToken(token string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.tokens[token]
	return h, ok
}

// Grant implements the session's Authority: false when the harness is
// gone.
func (a *Auth) Grant(h string) (api.Grant, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	allow, ok := a.allowed[h]
	if !ok {
		return api.Grant{}, false
	}
	return MustGrant(allow...), true
}

// OperatorGrant implements the session's Authority.
func (a *Auth) OperatorGrant() api.Grant {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.operator == nil {
		return api.DefaultGrant()
	}
	return MustGrant(a.operator...)
}

// Project implements the session's Authority.
func (a *Auth) Project(h string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.projects[h]
}

// Add makes token a harness's, with allow as its mcp_allow.
func (a *Auth) Add(token, harness string, allow ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens[token] = harness
	a.allowed[harness] = append([]string{}, allow...)
}

// SetToken makes token a harness's without touching its mcp_allow.
func (a *Auth) SetToken(token, harness string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens[token] = harness
}

// Revoke forgets token, as the end of its run does.
func (a *Auth) Revoke(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tokens, token)
}

// SetAllowed changes a harness's mcp_allow, as a reload does.
func (a *Auth) SetAllowed(h string, allow ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowed[h] = append([]string{}, allow...) // never nil: nil means "harness gone"
}

// SetProject puts a harness in a project.
func (a *Auth) SetProject(h, project string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.projects[h] = project
}

// SetOperator changes the operator's grant.
func (a *Auth) SetOperator(allow ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.operator = append([]string{}, allow...)
}

// MustGrant parses a grant the test wrote; a typo panics the test.
func MustGrant(allow ...string) api.Grant {
	g, err := api.ParseGrant(allow)
	if err != nil {
		panic(err)
	}
	return g
}

// FacadeTools are the names of the facade tools of the given classes,
// sorted (as a session's tools/list answers).
func FacadeTools(classes ...api.Class) []string {
	var out []string
	for _, t := range facade.Tools() {
		if slices.Contains(classes, t.Class) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// ToolNames lists cs's tools, sorted by name; the list must come within
// 10 s, so a hung session fails the test instead of hanging it.
func ToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	names := make([]string, 0, len(res.Tools))
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// Bearer is an http.RoundTripper that adds "Authorization: Bearer Token"
// to every request before Base sends it.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}
