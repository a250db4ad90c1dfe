package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/harness-dev/harness/internal/fdtest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// oversizePeer is a peer of a server-side connection with a small limit.
func oversizePeer(t *testing.T, limit int) (*rawPeer, *Conn) {
	t.Helper()
	p, c := newPeer(t, true)
	c.limit = limit
	return p, c
}

// TestOversizedMessageIsAnsweredAndSkipped: a message over the limit is
// read past without being kept, answered with an Invalid Request error for
// its id (found wherever it stands: the TypeScript SDK writes it last) and
// the session reads on.
func TestOversizedMessageIsAnsweredAndSkipped(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	for _, tc := range []struct {
		name, msg, wantID string
	}{
		{"id last", `{"method":"tools/call","params":{"arguments":{"s":"` + big + `"}},"jsonrpc":"2.0","id":41}`, "41"},
		{"id first", `{"jsonrpc":"2.0","id":"a,}\"b","method":"tools/call","params":{"s":"` + big + `"}}`, `"a,}\"b"`},
		{"nested id is not the id", `{"jsonrpc":"2.0","method":"x","params":{"id":7,"s":"` + big + `"}}`, "null"},
		{"pretty-printed", "{\n\"jsonrpc\": \"2.0\",\n\"method\": \"x\",\n\"params\": {\"s\": \"" + big + "\",\n\"t\": [1,\n2]},\n\"id\": 5\n}", "5"},
		{"not json", big, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := oversizePeer(t, 1000)
			p.send(tc.msg + "\n" + `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
			msg, err := c.Read(context.Background())
			if err != nil {
				t.Fatalf("Read = %v, want the message after the oversized one", err)
			}
			if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" {
				t.Fatalf("Read = %#v, want the ping", msg)
			}
			var e errorAnswer
			if line := p.line(); json.Unmarshal([]byte(line), &e) != nil {
				t.Fatalf("peer got %q", line)
			}
			if string(e.ID) != tc.wantID || e.Error.Code != codeInvalidRequest ||
				!strings.Contains(e.Error.Message, "exceeds this session's limit of 1000 bytes") || len(e.Error.Message) > 200 {
				t.Fatalf("answer id %s code %d %q, want id %s and the limit", e.ID, e.Error.Code, e.Error.Message, tc.wantID)
			}
		})
	}
}

// TestOversizedMessageAtEOF: the stream ends inside an oversized message;
// it is answered and Read ends with EOF.
func TestOversizedMessageAtEOF(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	c, _ := (&Transport{Reader: a, Writer: a, AnswerInvalid: true, MaxMessage: 100}).Connect(context.Background())
	t.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	go func() {
		_, _ = io.WriteString(b, `{"jsonrpc":"2.0","id":3,"method":"x","params":"`+strings.Repeat("y", 500))
		_ = b.(*net.UnixConn).CloseWrite()
	}()
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read = %v, want EOF", err)
	}
	p := &rawPeer{t: t, conn: b, r: bufio.NewReader(b)}
	var e errorAnswer
	if line := p.line(); json.Unmarshal([]byte(line), &e) != nil || string(e.ID) != "3" {
		t.Fatalf("peer got %q", line)
	}
}

// Without AnswerInvalid (an upstream pipe) an oversized message still ends
// the connection.
func TestOversizedMessageEndsAClientConnection(t *testing.T) {
	p, c := newPeer(t, false)
	c.limit = 100
	p.send(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("z", 500) + `"}` + "\n")
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("Read = %v, want ErrMessageTooLarge", err)
	}
}

// TestCancelledRequestGetsNoAnswer: per MCP no response is due after the
// client cancelled a request; the handler's late answer is dropped, the
// others go out, and the call no longer holds the peer's EOF back.
func TestCancelledRequestGetsNoAnswer(t *testing.T) {
	p, c := newPeer(t, true)
	ctx := context.Background()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}` + "\n")
	for range 3 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []float64{1, 2} {
		id, _ := jsonrpc.MakeID(n)
		resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}
		if err := c.Write(ctx, resp); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.line(); !strings.Contains(got, `"id":2`) {
		t.Fatalf("peer got %q first, want only the answer to 2", got)
	}
	c.pendingMu.Lock()
	left := len(c.pending) + len(c.cancelled)
	c.pendingMu.Unlock()
	if left != 0 {
		t.Fatalf("%d calls still owed after the cancelled one was dropped", left)
	}
}

// TestScenario_AnAnswerTooLargeToTakeEndsItsCallAndTheSessionGoesOn: on a
// client's connection (RefuseOversized), a response over the limit is read
// past, in blocks, and handed on as an error response for its id
// (CodeTooLarge), wherever the id stands; an oversized notification is
// dropped and an oversized request is answered; reading goes on.
func TestScenario_AnAnswerTooLargeToTakeEndsItsCallAndTheSessionGoesOn(t *testing.T) {
	big := strings.Repeat("y", 300_000) // past keepBuffer: held in blocks
	p, c := newPeer(t, false)
	c.limit, c.refuse = 200_000, true
	p.send(`{"jsonrpc":"2.0","result":{"text":"` + big + `"},"id":7}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"s":"` + big + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"r1","method":"sampling/createMessage","params":{"s":"` + big + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":8,"result":{"text":"` + big[:150_000] + `"}}` + "\n")
	msg, err := c.Read(context.Background())
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.ID.Raw() != int64(7) {
		t.Fatalf("Read = %#v, %v; want the error answer for id 7", msg, err)
	}
	var rpc *jsonrpc.Error
	if !errors.As(resp.Error, &rpc) || rpc.Code != CodeTooLarge || !strings.Contains(rpc.Message, "exceeds the limit of 200000 bytes") {
		t.Fatalf("the answer for id 7: %v", resp.Error)
	}
	// The notification is dropped, the request answered, and the answer
	// under the limit read whole.
	msg, err = c.Read(context.Background())
	if resp, ok := msg.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != int64(8) || len(resp.Result) < 150_000 {
		t.Fatalf("Read = %T, %v; want the whole answer for id 8", msg, err)
	}
	var e errorAnswer
	if line := p.line(); json.Unmarshal([]byte(line), &e) != nil || string(e.ID) != `"r1"` || e.Error.Code != codeInvalidRequest {
		t.Fatalf("the oversized request got %q", line)
	}
}
