package jsonl

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/harness-dev/harness/internal/fdtest"
)

// TestInterceptedCallsAreAnsweredByWhoeverTookThem: a call the hook takes
// never reaches Read's caller; its answer (SendResult) goes out with the
// id as the peer wrote it, a cancelled one's answer is dropped, a peer's
// EOF waits for the taken calls' answers too, and calls in a batch or with
// an id the SDK cannot hold as written are not offered.
func TestInterceptedCallsAreAnsweredByWhoeverTookThem(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	var mu sync.Mutex
	var taken []jsonrpc.ID
	tr := &Transport{Reader: a, Writer: a, AnswerInvalid: true, Intercept: func(_ *Conn, req *jsonrpc.Request) bool {
		if req.Method != "fast" {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		taken = append(taken, req.ID)
		return true
	}}
	mc, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*Conn)
	t.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	p := &rawPeer{t: t, conn: b, r: bufio.NewReader(b)}
	go func() {
		_, _ = io.WriteString(b, `{"jsonrpc":"2.0","id":"s-1","method":"fast","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","id":7,"method":"fast"}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`+"\n"+
			`[{"jsonrpc":"2.0","id":8,"method":"fast"}]`+"\n"+
			`{"jsonrpc":"2.0","id":1.5,"method":"fast"}`+"\n"+
			`{"jsonrpc":"2.0","id":9,"method":"slow"}`+"\n")
		_ = b.(*net.UnixConn).CloseWrite()
	}()
	var got []string
	for range 4 { // the cancellation, the batch's call, 1.5's call, slow
		msg, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			got = append(got, req.Method)
		}
	}
	if want := "notifications/cancelled fast fast slow"; strings.Join(got, " ") != want {
		t.Fatalf("Read gave %q, want %q", strings.Join(got, " "), want)
	}
	mu.Lock()
	if len(taken) != 2 {
		t.Fatalf("taken %v, want the calls s-1 and 7", taken)
	}
	mu.Unlock()
	eof := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); eof <- err }()
	// The SDK's answers to the three it got.
	for _, id := range []any{float64(8), "\x00jsonl-id-1", float64(9)} {
		jid, _ := jsonrpc.MakeID(id)
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: jid, Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sendResult(c, taken[1], []byte(`{"dropped":true}`)); err != nil { // 7 was cancelled
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v with s-1 unanswered", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := sendResult(c, taken[0], []byte(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting after every call was answered")
	}
	var lines []string
	for range 4 {
		lines = append(lines, strings.TrimSpace(p.line()))
	}
	want := []string{`[{"jsonrpc":"2.0","id":8,"result":{}}]`, `{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`, `{"jsonrpc":"2.0","id":"s-1","result":{"content":[]}}`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("peer got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// sendResult is SendResult waited for.
func sendResult(c *Conn, id jsonrpc.ID, result []byte) error {
	done := make(chan error, 1)
	c.SendResult(id, result, func(err error) { done <- err })
	return <-done
}
