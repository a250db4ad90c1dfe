package httpmcp

import (
	"context"
	"slices"
	"testing"

	"github.com/harness-dev/harness/internal/mcp/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestScenario_StatelessRequestsAreAttributedAndJudgedPerRequest(t *testing.T) {
	e := newEnv(t)
	e.auth.Add("tok-web", "web", "read")
	e.auth.Add("tok-old", "old", "read")

	web, err := e.connectStateless(t, "tok-web")
	if err != nil {
		t.Fatal(err)
	}
	if v := web.InitializeResult().ProtocolVersion; v != protocolStateless {
		t.Fatalf("negotiated %q, want %s", v, protocolStateless)
	}
	web2, err := e.connectStateless(t, "tok-web")
	if err != nil {
		t.Fatal(err)
	}
	legacy := e.mustConnect(t, "tok-web") // the same token, session-based, at once
	for _, cs := range []*mcp.ClientSession{web, web2, legacy} {
		if got := mcptest.ToolNames(t, cs); !slices.Equal(got, readTools) {
			t.Fatalf("web (read) lists %v", got)
		}
	}
	// One server serves every stateless request of a credential; the
	// session-based client has its own.
	if n := e.sessions.shared.Load(); n != 1 {
		t.Errorf("built %d shared servers for one credential", n)
	}
	if e.boundCount() != 1 {
		t.Errorf("bindings %d: stateless requests must not bind sessions", e.boundCount())
	}

	// The grant in force judges each request.
	e.auth.Add("tok-web", "web", "read", "write")
	e.sessions.Refresh()
	if got := mcptest.ToolNames(t, web); !slices.Equal(got, allTools) {
		t.Fatalf("web after widening lists %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if res, err := web.CallTool(ctx, &mcp.CallToolParams{Name: "harness_start", Arguments: map[string]any{"name": "x"}}); err != nil || res.IsError {
		t.Fatalf("write call after widening: %+v %v", res, err)
	}

	// A revoked token is refused on its next request; the next new
	// credential's first request drops the dead one's server.
	old, err := e.connectStateless(t, "tok-old")
	if err != nil {
		t.Fatal(err)
	}
	e.auth.Revoke("tok-old")
	if _, err := old.ListTools(ctx, nil); err == nil {
		t.Fatal("a revoked token's stateless request succeeded")
	}
	e.auth.Add("tok-new", "new", "read")
	if _, err := e.connectStateless(t, "tok-new"); err != nil {
		t.Fatal(err)
	}
	e.h.mu.Lock()
	n := len(e.h.shareds)
	e.h.mu.Unlock()
	if n != 2 {
		t.Errorf("%d shared servers held, want 2 (web, new)", n)
	}
}
