package broker

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oddServer is an in-process upstream whose tools/list carries schemas the
// go-sdk would refuse to register, injected by a middleware after the list
// is built. It records the protocol version the client asked for.
type oddServer struct {
	version chan string
	done    chan error
}

func startOddServer(t *testing.T, b *Broker, unit string) *oddServer {
	t.Helper()
	o := &oddServer{version: make(chan string, 1), done: make(chan error, 1)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			o.version <- req.Session.InitializeParams().ProtocolVersion
		},
	})
	srv.AddTool(&mcp.Tool{Name: "fine", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	odd := []*mcp.Tool{
		{Name: "scalar", InputSchema: map[string]any{"type": "string"}},
		{Name: "notype", InputSchema: map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}}},
		{Name: "nullable", InputSchema: map[string]any{"type": []any{"object", "null"}, "required": []any{"a"}}},
		{Name: "missing"},
		{Name: "array", InputSchema: []any{1, 2}},
		{Name: "badout", InputSchema: map[string]any{"type": "object"}, OutputSchema: map[string]any{"type": "array"}},
		{Name: "goodout", InputSchema: map[string]any{"type": "object"}, OutputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
		{Name: strings.Repeat("t", 70), InputSchema: map[string]any{"type": "object"}},
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				lr.Tools = append(lr.Tools, odd...)
			}
			return res, err
		}
	})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	go func() { o.done <- srv.Run(context.Background(), &mcp.IOTransport{Reader: sr, Writer: sw}) }()
	serveRun(b, nil, unit, 1, cw, cr)
	return o
}

func TestOddSchemasAreNormalisedNotFatal(t *testing.T) {
	b := newBroker(t, Options{}, map[string]Upstream{"odd": {Key: "odd"}})
	o := startOddServer(t, b, "odd")
	waitFor(t, b, "odd connected", connected(b, "odd"))
	if v := <-o.version; v != ProtocolVersion {
		t.Errorf("upstream saw protocol %q, want %q", v, ProtocolVersion)
	}

	tools := map[string]*mcp.Tool{}
	for _, tool := range b.Tools("") {
		tools[tool.Tool.Name] = tool.Tool
	}
	schema := func(name string) string {
		tool, ok := tools[name]
		if !ok {
			t.Fatalf("tool %s not served; have %v", name, toolNames(b.Tools("")))
		}
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	for name, want := range map[string]string{
		"odd__fine":     `{"type":"object"}`,
		"odd__scalar":   `{"type":"object"}`,
		"odd__notype":   `{"properties":{"a":{"type":"string"}},"type":"object"}`,
		"odd__nullable": `{"required":["a"],"type":"object"}`,
		"odd__missing":  `{"type":"object"}`,
		"odd__array":    `{"type":"object"}`,
	} {
		if got := schema(name); got != want {
			t.Errorf("%s schema = %s, want %s", name, got, want)
		}
	}
	if tools["odd__badout"].OutputSchema != nil {
		t.Errorf("invalid output schema kept: %v", tools["odd__badout"].OutputSchema)
	}
	if tools["odd__goodout"].OutputSchema == nil {
		t.Error("valid output schema dropped")
	}
	if _, ok := tools["odd__"+strings.Repeat("t", 70)]; ok {
		t.Error("over-long name served")
	}
	if ws := b.Warnings(); len(ws) != 1 || !strings.Contains(ws[0], "tool "+strings.Repeat("t", 70)+":") {
		t.Errorf("Warnings = %q", ws)
	}

	// What a session does with them: register each on a go-sdk server,
	// which panics on a non-object input schema.
	srv := mcp.NewServer(&mcp.Implementation{Name: "downstream"}, nil)
	for _, tool := range tools {
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	if got := text(t, call(t, b, "", "odd__fine", map[string]any{})); got != "ok" {
		t.Errorf("fine = %q", got)
	}

	b.Close()
	if err := <-o.done; err != nil {
		t.Errorf("odd server after the broker closed: %v", err)
	}
}

func TestNormaliseInput(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)
	got, changed := normaliseInput(raw)
	if changed || string(got.(json.RawMessage)) != string(raw) {
		t.Errorf("object schema as RawMessage changed: %v %s", changed, got)
	}
	for _, in := range []any{nil, true, "string", 3.5, json.RawMessage(`[1]`), map[string]any{"type": 7}} {
		got, changed := normaliseInput(in)
		if m, ok := got.(map[string]any); !changed || !ok || m["type"] != "object" {
			t.Errorf("normaliseInput(%#v) = %#v, %v", in, got, changed)
		}
	}
}
