//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession runs `harness mcp` as an agent would (a stdio child) and
// connects the go-sdk client to it.
func (f *fleet) mcpSession(token string, allowControl bool, opts *mcp.ClientOptions) *mcp.ClientSession {
	f.T.Helper()
	args := []string{"mcp", "--socket", f.Socket}
	if allowControl {
		args = append(args, "--allow-control")
	}
	cmd := exec.Command(harnessBin, args...)
	cmd.Env = append(os.Environ(), "HARNESS_MCP_TOKEN="+token, "HARNESS_SOCKET=")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		f.T.Fatalf("connect harness mcp: %v", err)
	}
	f.T.Cleanup(func() { s.Close() })
	return s
}

// token reads the HARNESS_MCP_TOKEN a harness wrote to a file (the test's
// stand-in for an agent that launches `harness mcp` itself).
func token(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if tok := strings.TrimSpace(string(b)); err == nil && len(tok) >= 32 {
			return tok
		}
		if time.Now().After(deadline) {
			t.Fatalf("no token in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tokenHarness(name, dir, extra string) string {
	return "\n[harness." + name + "]\ncmd = \"sh\"\nargs = [\"-c\", \"echo $HARNESS_MCP_TOKEN > " +
		filepath.Join(dir, name+".token") + "; exec sleep 100000\"]\nenabled = true\n" + extra + "\n"
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: protocol error %v", name, err)
	}
	return res
}

// resultJSON decodes a tool result's structured content.
func resultJSON(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
}

// errorCode returns the stable code of an isError result ("" if none).
func errorCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		return ""
	}
	var body struct {
		Code string `json:"code"`
	}
	resultJSON(t, res, &body)
	return body.Code
}
