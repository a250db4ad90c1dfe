package jsonl

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestScenario_IdsAreEchoedByteForByte: whatever id a call carries, its
// answer carries the same bytes, and a cancellation naming it reaches that
// call (not the one whose id the SDK would have read it as).
func TestScenario_IdsAreEchoedByteForByte(t *testing.T) {
	for _, raw := range []string{`1.5`, `1e40`, `-0`, `1.0`, `"\u0041"`, `"a<b"`, `7`, `"x"`, `-9223372036854775809`} {
		t.Run(raw, func(t *testing.T) {
			p, c := newPeer(t, true)
			p.send(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + raw + `}}` + "\n")
			msg, err := c.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			req := msg.(*jsonrpc.Request)
			cancel, err := c.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cancel.(*jsonrpc.Request).Params); raw != "7" && raw != `"x"` && !strings.Contains(got, standIn[1:]) {
				t.Errorf("cancellation params %s do not name the call's stand-in", got)
			}
			// The cancelled call is still answered here: c.answer drops it
			// only for a call it knows is cancelled, which this one is.
			go func() {
				_ = c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)})
				_ = c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/x"})
			}()
			if line := p.line(); !strings.Contains(line, "notifications/x") {
				t.Fatalf("peer got %s: the answer to a cancelled call went out", line)
			}
		})
	}
}

// TestScenario_AnswersCarryTheRawID: the answer to a call with an id the
// SDK cannot hold carries that id as it was written.
func TestScenario_AnswersCarryTheRawID(t *testing.T) {
	for _, raw := range []string{`1.5`, `1e40`, `"\u0041"`, `12`} {
		p, c := newPeer(t, true)
		p.send(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}` + "\n")
		msg, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = c.Write(context.Background(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: []byte(`{}`)})
		}()
		if line, want := strings.TrimSpace(p.line()), `{"jsonrpc":"2.0","id":`+raw+`,"result":{}}`; line != want {
			t.Errorf("answer %s, want %s", line, want)
		}
	}
}
