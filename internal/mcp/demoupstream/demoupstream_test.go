package demoupstream

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect runs Serve in-process and returns a client session to it and a
// channel with Serve's result.
func connect(t *testing.T, ctx context.Context, name string, opts *mcp.ClientOptions) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, sr, sw, name)
		// Serve does not own its streams; closing them here ends the
		// client's reads as a process exit would.
		sw.Close()
		sr.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, done
}

func callText(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestToolsAndAnswers(t *testing.T) {
	var progress []float64
	cs, done := connect(t, context.Background(), "inst", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress = append(progress, req.Params.Progress)
		},
	})
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		// add_tool changes the server: it alone is not read-only.
		if ro := tool.Annotations != nil && tool.Annotations.ReadOnlyHint; ro != (tool.Name != "add_tool") {
			t.Errorf("tool %s: readOnlyHint %v", tool.Name, ro)
		}
	}
	slices.Sort(names)
	want := []string{"add_tool", "big", "boom", "cancelled", "echo", "env", "fail", "progress", "search", "slow", "trace"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	if got, _ := callText(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "q"}}); got != "inst: results for q" {
		t.Errorf("search = %q", got)
	}
	if got, isErr := callText(t, cs, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"message": "m"}}); got != "m" || !isErr {
		t.Errorf("fail = %q, %v", got, isErr)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "boom", Arguments: map[string]any{"message": "kaboom"}}); err == nil {
		t.Error("boom returned no protocol error")
	}
	p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3}}
	p.SetProgressToken("tok")
	if got, _ := callText(t, cs, p); got != "done" {
		t.Errorf("progress = %q", got)
	}
	// The ping before the result guarantees all three were handled.
	if !slices.Equal(progress, []float64{1, 2, 3}) {
		t.Errorf("progress notifications = %v", progress)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve after the client left: %v", err)
	}
}

func TestServeEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cs, done := connect(t, ctx, "inst", nil)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	// Returns only once the server side is gone; its error is the EOF.
	_ = cs.Wait()
	_ = cs.Close()
}
