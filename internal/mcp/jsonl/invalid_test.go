package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// errorAnswer is the error response the peer got for a bad line.
type errorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *rawPeer) errorAnswer() errorAnswer {
	p.t.Helper()
	line := p.line()
	var e errorAnswer
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		p.t.Fatalf("peer got %q: %v", line, err)
	}
	if e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Message == "" {
		p.t.Fatalf("peer got %q, want a JSON-RPC error with id null", line)
	}
	return e
}

// TestAnswerInvalidRepliesAndReadsOn: with AnswerInvalid, a line that is
// not a JSON-RPC message gets an error response with id null (parse error
// for bad JSON, invalid request otherwise) and the next message is read
// as if the bad line had not been there.
func TestAnswerInvalidRepliesAndReadsOn(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		code       int
	}{
		{"not json", "hello", codeParseError},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"x"} {}`, codeParseError},
		{"closed too often", `{"jsonrpc":"2.0"}}`, codeParseError},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"x"}`, codeInvalidRequest},
		{"bad id", `{"jsonrpc":"2.0","id":{},"method":"x"}`, codeInvalidRequest},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, codeInvalidRequest}, // it once hung the session
		{"not an object", `42`, codeInvalidRequest},
		{"empty batch", `[]`, codeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newPeer(t, true)
			p.send(tc.line + "\n" + `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
			msg, err := c.Read(context.Background())
			if err != nil {
				t.Fatalf("Read = %v, want the message after the bad line", err)
			}
			if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "ping" {
				t.Fatalf("Read = %#v, want the ping", msg)
			}
			if e := p.errorAnswer(); e.Error.Code != tc.code {
				t.Fatalf("error code %d (%s), want %d", e.Error.Code, e.Error.Message, tc.code)
			}
		})
	}
}

// TestAnswerInvalidQuotesNoMoreThanAShortPrefix: the reason in an error
// answer may quote the peer's input; a huge bad value is not echoed back.
func TestAnswerInvalidQuotesNoMoreThanAShortPrefix(t *testing.T) {
	p, c := newPeer(t, true)
	huge := strings.Repeat("é", 50_000)
	p.send(`{"jsonrpc":"` + huge + `","id":1,"method":"x"}` + "\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n")
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := p.errorAnswer()
	if len(e.Error.Message) > 400 || !strings.Contains(e.Error.Message, "é") {
		t.Fatalf("error message of %d bytes: %.200q", len(e.Error.Message), e.Error.Message)
	}
}

// TestAnInvalidBatchOwesNoAnswers: a batch refused for a bad member must
// not leave its good members waiting for answers that will never come,
// or the peer's EOF would be held back forever.
func TestAnInvalidBatchOwesNoAnswers(t *testing.T) {
	p, c := newPeer(t, true)
	go func() {
		_, _ = io.WriteString(p.conn, `[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"1.0","id":2,"method":"y"}]`+"\n")
		_ = p.conn.(*net.UnixConn).CloseWrite()
	}()
	eof := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); eof <- err }()
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("EOF held back for a call of a batch that was refused")
	}
	if e := p.errorAnswer(); e.Error.Code != codeInvalidRequest {
		t.Fatalf("batch answered with %+v", e)
	}
}

// TestEOFInsideAMessageIsAnsweredAfterTheCallsBefore: a peer that ends in
// the middle of a value still gets the answers to the calls it sent
// before, and a parse error for the unfinished value.
func TestEOFInsideAMessageIsAnsweredAfterTheCallsBefore(t *testing.T) {
	p, c := newPeer(t, true)
	ctx := context.Background()
	go func() {
		_, _ = io.WriteString(p.conn, `{"jsonrpc":"2.0","id":1,"method":"slow"}`+"\n"+`{"jsonrpc":"2.0",`)
		_ = p.conn.(*net.UnixConn).CloseWrite()
	}()
	if _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() { _, err := c.Read(ctx); eof <- err }()
	if e := p.errorAnswer(); e.Error.Code != codeParseError {
		t.Fatalf("unfinished value answered with %+v", e)
	}
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v with call 1 unanswered", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: mustID(t, 1), Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting after the call was answered")
	}
	if got := p.line(); !strings.Contains(got, `"id":1`) {
		t.Fatalf("peer got %s, want the answer to call 1", got)
	}
}
