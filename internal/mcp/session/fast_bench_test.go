package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/harness-dev/harness/internal/mask"
	"github.com/harness-dev/harness/internal/mcp/broker"
	"github.com/harness-dev/harness/internal/mcp/mcptest"
)

// rawUpstream answers the broker's handshake and every tools/call of its
// one tool, echo, from canned bytes: an upstream that costs next to
// nothing, so a benchmark of the fast path measures the daemon's side.
func rawUpstream(in io.Reader, out io.Writer) {
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		var result string
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}`
		case "tools/list":
			result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"hello from the bench"}]}`
		default:
			result = `{}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}

// BenchmarkFastCall is one tools/call through a session's fast path, from
// a client's bytes on a socket to an upstream's pipes and back, with the
// call log on.
func BenchmarkFastCall(b *testing.B) {
	logger := slog.New(slog.DiscardHandler)
	br := broker.New(logger, broker.Options{Mask: mask.New(fastSecret).String})
	br.Configure(map[string]broker.Upstream{"up": {Key: "up"}})
	upIn, brokerOut, _ := os.Pipe()
	brokerIn, upOut, _ := os.Pipe()
	go rawUpstream(upIn, upOut)
	br.Serve(context.Background(), api.UpstreamRun{Unit: "up", Run: 1, Link: api.Pipes{Stdin: brokerOut, Stdout: brokerIn}})
	for deadline := time.Now().Add(waitFor); !slices.ContainsFunc(br.Status(), func(s broker.Status) bool { return s.Unit == "up" && s.Connected }); {
		if time.Now().After(deadline) {
			b.Fatal("upstream never connected")
		}
		time.Sleep(time.Millisecond)
	}
	ops, auth := mcptest.NewOps(), mcptest.NewAuth()
	auth.SetAllowed("web", "read")
	m := NewManager(ops, auth, br, nil, logger, "bench")
	m.SetCallRecorder(&fakeRecorder{})
	server, client := fdtest.SocketPair(b)
	go func() { _ = m.Serve(context.Background(), server, Identity{Harness: "web"}) }()
	r := bufio.NewReader(client)
	send := func(s string) { _, _ = io.WriteString(client, s+"\n") }
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	_, _ = r.ReadBytes('\n')
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(i int) {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"hello from the bench"}}}`, i))
		line, err := r.ReadBytes('\n')
		if err != nil || !strings.Contains(string(line), "hello from the bench") {
			b.Fatalf("answer %q: %v", line, err)
		}
	}
	call(1)
	before := br.FastCalls()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		call(i + 2)
	}
	b.StopTimer()
	if br.FastCalls()-before != uint64(b.N) {
		b.Fatalf("%d of %d calls took the fast path", br.FastCalls()-before, b.N)
	}
	_ = client.Close()
	m.Close()
	br.Close()
	upOut.Close()
	upIn.Close()
}
