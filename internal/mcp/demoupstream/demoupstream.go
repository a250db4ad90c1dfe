// Package demoupstream is a tiny stdio MCP server built with the go-sdk. It
// is the upstream behind `harness demo` (through the hidden
// `harness demo-upstream` subcommand), the broker's tests and the benchmarks:
// each tool exercises one thing a broker has to forward faithfully.
// HTTPServer serves it over Streamable HTTP for the tests of remote
// upstreams, with the faults they need (a bearer token, 401, restarts).
package demoupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve runs the demo server on in/out (newline-delimited JSON-RPC) until
// the client goes away or ctx is cancelled. name identifies the instance:
// it is the server's implementation name and appears in search results, so
// two instances are distinguishable.
func Serve(ctx context.Context, in io.Reader, out io.Writer, name string) error {
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	if err := NewServer(name).Run(ctx, t); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return fmt.Errorf("demoupstream %s: %w", name, err)
	}
	return nil
}

// NewServer returns the demo server called name, for any transport (Serve
// runs it on stdio, HTTPServer over Streamable HTTP).
func NewServer(name string) *mcp.Server {
	d := &demo{name: name, server: mcp.NewServer(&mcp.Implementation{Name: name, Version: "0.1.0"}, nil)}
	d.cancelledCh = make(chan struct{})
	d.register()
	return d.server
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type demo struct {
	name   string
	server *mcp.Server

	mu        sync.Mutex
	cancelled int
	// cancelledCh is closed and replaced whenever cancelled grows, so that
	// the cancelled tool can wait for a count without polling.
	cancelledCh chan struct{}
}

type textIn struct {
	Text string `json:"text" jsonschema:"text to echo back"`
}

type queryIn struct {
	Query string `json:"query" jsonschema:"what to search for"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"how long to take, in milliseconds"`
}

type cancelledIn struct {
	AtLeast int `json:"at_least,omitempty" jsonschema:"wait until at least this many calls were cancelled"`
}

type stepsIn struct {
	Steps int `json:"steps" jsonschema:"number of progress notifications to send"`
	// NoSync skips the ping that otherwise holds the result back until the
	// client has handled every notification, so the result can overtake
	// them in the client as it does with most real servers.
	NoSync bool `json:"no_sync,omitempty" jsonschema:"return right after the last notification, without the ping that orders it before the result"`
}

type messageIn struct {
	Message string `json:"message" jsonschema:"the error message"`
}

type keyIn struct {
	Key string `json:"key" jsonschema:"environment variable name"`
}

type bytesIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

type nameIn struct {
	Name string `json:"name" jsonschema:"name of the tool to add"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// readOnly marks the tools that change nothing, so the broker classes
// them read (docs/design/mcp.md); add_tool changes the server and, like the tools
// it adds, carries no hint, which makes it write.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
}

// SearchDescriptionEnv, when set, replaces the search tool's description:
// an upstream whose tool changes across restarts, as in a rug pull, for
// the tests of tool pinning.
const SearchDescriptionEnv = "HARNESS_DEMO_SEARCH_DESCRIPTION"

// CallLogEnv, when set, is a file the demo appends a line to for every
// echo call it serves: the count at the upstream, for the tests of rate
// limits.
const CallLogEnv = "HARNESS_DEMO_CALL_LOG"

func countCall(tool string) error {
	path := os.Getenv(CallLogEnv)
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("demo: call log: %w", err)
	}
	_, err = fmt.Fprintln(f, tool)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func searchDescription() string {
	if d := os.Getenv(SearchDescriptionEnv); d != "" {
		return d
	}
	return "Pretend to search; the answer names this instance."
}

// traceOut is what the trace tool saw.
type traceOut struct {
	Meta   string `json:"meta"`
	Header string `json:"header"`
}

func (d *demo) register() {
	mcp.AddTool(d.server, &mcp.Tool{Name: "echo", Annotations: readOnly(), Description: "Return text unchanged."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			if err := countCall("echo"); err != nil {
				return nil, nil, err
			}
			return text(in.Text), nil, nil
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "search", Annotations: readOnly(), Description: searchDescription()},
		func(_ context.Context, _ *mcp.CallToolRequest, in queryIn) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("%s: results for %s", d.name, in.Query)), nil, nil
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "slow", Annotations: readOnly(), Description: "Sleep ms milliseconds; a progress token gets one notification when the sleep starts."},
		d.slow)
	mcp.AddTool(d.server, &mcp.Tool{Name: "cancelled", Annotations: readOnly(), Description: "How many calls were cancelled so far."},
		d.cancelledCount)
	mcp.AddTool(d.server, &mcp.Tool{Name: "progress", Annotations: readOnly(), Description: "Send steps progress notifications, then (unless no_sync) ping the client, then return done."},
		d.progress)
	mcp.AddTool(d.server, &mcp.Tool{Name: "fail", Annotations: readOnly(), Description: "Return an isError result carrying message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in messageIn) (*mcp.CallToolResult, any, error) {
			res := text(in.Message)
			res.IsError = true
			return res, nil, nil
		})
	// boom uses the low-level handler: its Go error becomes a JSON-RPC error
	// rather than an isError result.
	d.server.AddTool(&mcp.Tool{Name: "boom", Annotations: readOnly(), Description: "Fail with a JSON-RPC error carrying message.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in messageIn
			if err := unmarshalArgs(req, &in); err != nil {
				return nil, err
			}
			return nil, errors.New(in.Message)
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "big", Annotations: readOnly(), Description: "Return a text of bytes bytes (at most 1 GiB), to test result bounds."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bytesIn) (*mcp.CallToolResult, any, error) {
			if in.Bytes < 0 || in.Bytes > 1<<30 {
				return nil, nil, fmt.Errorf("big: bytes %d is out of range (0..1 GiB)", in.Bytes)
			}
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "trace", Annotations: readOnly(), Description: "Return the W3C traceparent this call carried, in _meta and (over HTTP) as a header."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, traceOut, error) {
			var out traceOut
			if req.Params != nil {
				out.Meta, _ = req.Params.Meta["traceparent"].(string)
			}
			if req.Extra != nil && req.Extra.Header != nil {
				out.Header = req.Extra.Header.Get("traceparent")
			}
			return text("traceparent: " + out.Meta), out, nil
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "env", Annotations: readOnly(), Description: "Return the value of an environment variable."},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyIn) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Key)), nil, nil
		})
	mcp.AddTool(d.server, &mcp.Tool{Name: "add_tool", Description: "Register a new tool at runtime (sends tools/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			if in.Name == "" {
				return nil, nil, errors.New("add_tool: name is empty")
			}
			added := in.Name
			d.server.AddTool(&mcp.Tool{Name: added, Description: "Added at runtime.", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(added + " called"), nil
				})
			return text("added " + added), nil, nil
		})
}

func (d *demo) slow(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	if tok := req.Params.GetProgressToken(); tok != nil {
		// Tells a test the handler is running, so a cancellation it sends
		// next reaches a call in progress rather than one still queued.
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: "started"}); err != nil {
			return nil, nil, fmt.Errorf("slow: progress: %w", err)
		}
	}
	timer := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return text(fmt.Sprintf("slept %dms", in.MS)), nil, nil
	case <-ctx.Done():
		d.mu.Lock()
		d.cancelled++
		close(d.cancelledCh)
		d.cancelledCh = make(chan struct{})
		d.mu.Unlock()
		return nil, nil, fmt.Errorf("slow: %w", ctx.Err())
	}
}

func (d *demo) cancelledCount(ctx context.Context, _ *mcp.CallToolRequest, in cancelledIn) (*mcp.CallToolResult, any, error) {
	for {
		d.mu.Lock()
		n, ch := d.cancelled, d.cancelledCh
		d.mu.Unlock()
		if n >= in.AtLeast {
			return text(fmt.Sprint(n)), nil, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("cancelled: waiting for %d: %w", in.AtLeast, ctx.Err())
		}
	}
}

func (d *demo) progress(ctx context.Context, req *mcp.CallToolRequest, in stepsIn) (*mcp.CallToolResult, any, error) {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return text("done"), nil, nil
	}
	for i := 1; i <= in.Steps; i++ {
		p := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)}
		if err := req.Session.NotifyProgress(ctx, p); err != nil {
			return nil, nil, fmt.Errorf("progress: step %d: %w", i, err)
		}
	}
	if in.NoSync {
		return text("done"), nil, nil
	}
	// The go-sdk client handles notifications on a queue while responses
	// bypass it; a ping is queued behind the notifications, so its answer
	// proves they were all handled before the result goes out.
	if err := req.Session.Ping(ctx, nil); err != nil {
		return nil, nil, fmt.Errorf("progress: ping: %w", err)
	}
	return text("done"), nil, nil
}

func unmarshalArgs(req *mcp.CallToolRequest, v any) error {
	if len(req.Params.Arguments) == 0 {
		return nil
	}
	if err := json.Unmarshal(req.Params.Arguments, v); err != nil {
		return fmt.Errorf("%s: arguments: %w", req.Params.Name, err)
	}
	return nil
}
