package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/harness-dev/harness/internal/fdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer serves one tool, echo, on conn with the go-sdk server over
// this package's transport.
func echoServer(t *testing.T, conn net.Conn) *mcp.ServerSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	ss, err := srv.Connect(context.Background(), &Transport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestSDKClientAndServerTalkOverIt drives the go-sdk client and server,
// both on this transport, through initialize, tools/list and tools/call.
func TestSDKClientAndServerTalkOverIt(t *testing.T) {
	a, b := net.Pipe()
	ss := echoServer(t, a)
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &Transport{Reader: b, Writer: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "héllo\nworld"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "héllo\nworld" {
		t.Fatalf("echo = %q", got)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil {
		t.Fatal("unknown tool: want an error")
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ss.Wait(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Logf("server ended: %v", err)
	}
}

// rawPeer is the far end of a connection under test, speaking lines.
type rawPeer struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func newRawPeer(t *testing.T) (*rawPeer, *Conn) { return newPeer(t, false) }

// newPeer is newRawPeer on a transport with AnswerInvalid set as given.
func newPeer(t *testing.T, answerInvalid bool) (*rawPeer, *Conn) {
	a, b := fdtest.SocketPair(t)
	c, err := (&Transport{Reader: a, Writer: a, AnswerInvalid: answerInvalid}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = b.Close() })
	return &rawPeer{t: t, conn: b, r: bufio.NewReader(b)}, c.(*Conn)
}

func (p *rawPeer) send(s string) {
	p.t.Helper()
	go func() { _, _ = io.WriteString(p.conn, s) }()
}

func (p *rawPeer) line() string {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	return s
}

func TestReadDecodesRequestsResponsesAndSkipsBlankLines(t *testing.T) {
	p, c := newRawPeer(t)
	ctx := context.Background()
	p.send("\n  \r\n" + `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}` + "\r\n")
	msg, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || req.ID.Raw() != int64(7) || string(req.Params) != `{"name":"x"}` {
		t.Fatalf("request = %#v", msg)
	}

	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	msg, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := msg.(*jsonrpc.Request); n.IsCall() || n.Method != "notifications/initialized" || n.Params != nil {
		t.Fatalf("notification = %#v", n)
	}

	p.send(`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no such method","data":{"k":1}}}` + "\n")
	msg, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp := msg.(*jsonrpc.Response)
	var we *jsonrpc.Error
	if resp.ID.Raw() != "a" || !errors.As(resp.Error, &we) || we.Code != -32601 || we.Message != "no such method" || string(we.Data) != `{"k":1}` {
		t.Fatalf("error response = %#v (%v)", resp, resp.Error)
	}

	p.send(`{"jsonrpc":"2.0","id":8,"result":{"ok":true}}` + "\n")
	msg, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp := msg.(*jsonrpc.Response); resp.Error != nil || string(resp.Result) != `{"ok":true}` {
		t.Fatalf("result response = %#v", resp)
	}
}

// TestReadJoinsAValueSpreadOverLines: a peer that pretty-prints its JSON
// still works, as it does with the SDK's decoder-based transport.
func TestReadJoinsAValueSpreadOverLines(t *testing.T) {
	p, c := newRawPeer(t)
	p.send("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\"}\n}\n")
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp := msg.(*jsonrpc.Response); string(resp.Result) != `{"text": "a\nb"}` {
		t.Fatalf("result = %s", resp.Result)
	}
}

func TestReadRefusesWhatIsNotJSONRPC(t *testing.T) {
	for name, line := range map[string]string{
		"not json":         "hello\n",
		"wrong version":    `{"jsonrpc":"1.0","id":1,"method":"x"}` + "\n",
		"no version":       `{"id":1,"method":"x"}` + "\n",
		"case-folded key":  `{"jsonrpc":"2.0","id":1,"Method":"x"}` + "\n",
		"bare id":          `{"jsonrpc":"2.0","id":1}` + "\n",
		"trailing garbage": `{"jsonrpc":"2.0","id":1,"method":"x"} {}` + "\n",
		"bad id":           `{"jsonrpc":"2.0","id":{},"method":"x"}` + "\n",
		"empty batch":      "[]\n",
	} {
		t.Run(name, func(t *testing.T) {
			p, c := newRawPeer(t)
			p.send(line)
			if msg, err := c.Read(context.Background()); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("Read = %#v, %v; want ErrInvalidMessage", msg, err)
			}
		})
	}
}

func TestReadRefusesAMessageOverTheLimit(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c, _ := (&Transport{Reader: a, Writer: a, MaxMessage: 64 << 10}).Connect(context.Background())
	defer c.Close()
	go func() {
		_, _ = io.WriteString(b, `{"jsonrpc":"2.0","id":1,"method":"`+strings.Repeat("x", 100<<10)+"\"}\n")
	}()
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("Read = %v; want ErrMessageTooLarge", err)
	}
}

func TestReadAcceptsALineLongerThanItsBuffer(t *testing.T) {
	p, c := newRawPeer(t)
	long := strings.Repeat("y", 200<<10)
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"s":"` + long + `"}}` + "\n")
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(msg.(*jsonrpc.Response).Result); got != len(long)+8 {
		t.Fatalf("result length %d", got)
	}
}

func TestCloseEndsABlockedRead(t *testing.T) {
	_, c := newRawPeer(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read after Close = %v; want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocked after Close")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestPeerEOFInsideAMessageIsAnError(t *testing.T) {
	p, c := newRawPeer(t)
	go func() {
		_, _ = io.WriteString(p.conn, `{"jsonrpc":"2.0",`)
		_ = p.conn.Close()
	}()
	if _, err := c.Read(context.Background()); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read = %v; want io.ErrUnexpectedEOF", err)
	}
}

// TestABatchIsAnsweredWithOneArray: JSON-RPC batches (MCP up to
// 2025-03-26) come in as separate messages and their responses go back as
// one array once every request of the batch has one.
func TestABatchIsAnsweredWithOneArray(t *testing.T) {
	p, c := newRawPeer(t)
	ctx := context.Background()
	p.send(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n")
	var ids []jsonrpc.ID
	for i := 0; i < 3; i++ {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if req := msg.(*jsonrpc.Request); req.IsCall() {
			ids = append(ids, req.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("calls in batch = %d", len(ids))
	}
	// An unrelated message is written at once; the batch waits for both.
	if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/x"}); err != nil {
		t.Fatal(err)
	}
	if got := p.line(); !strings.Contains(got, `"notifications/x"`) {
		t.Fatalf("first line = %s", got)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[1], Result: json.RawMessage(`2`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(p.line()), &arr); err != nil {
		t.Fatal(err)
	}
	if len(arr) != 2 || arr[0]["result"] != 2.0 || arr[1]["result"] != 1.0 {
		t.Fatalf("batch response = %v", arr)
	}
}

func TestWriteIsOneLinePerMessage(t *testing.T) {
	p, c := newRawPeer(t)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		done <- c.Write(ctx, &jsonrpc.Request{Method: "m", Params: json.RawMessage(`{"s":"a\nb"}`)})
	}()
	line := p.line()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "}\n") {
		t.Fatalf("written = %q", line)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Write(cctx, &jsonrpc.Request{Method: "m"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write on a cancelled context = %v", err)
	}
}

// TestReadJoinsALongPrettyPrintedValueInLinearTime: a large result
// pretty-printed over 64k lines. Re-parsing the growing value at every line
// took minutes; scanning only the new bytes takes milliseconds.
func TestReadJoinsALongPrettyPrintedValueInLinearTime(t *testing.T) {
	p, c := newRawPeer(t)
	items := make([]int, 64<<10)
	for i := range items {
		items[i] = i
	}
	body, err := json.MarshalIndent(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"items": items, "s": "a \\\" ] } [ {"}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = p.conn.Write(append(body, '\n')) }()
	start := time.Now()
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("reading %d lines took %s", bytes.Count(body, []byte("\n")), took)
	}
	var res struct {
		Items []int
		S     string
	}
	if err := json.Unmarshal(msg.(*jsonrpc.Response).Result, &res); err != nil || len(res.Items) != len(items) || res.S != "a \\\" ] } [ {" {
		t.Fatalf("result: %d items, s %q, %v", len(res.Items), res.S, err)
	}
}

// TestReadTakesALastMessageWithoutNewline, as the SDK's transport does.
func TestReadTakesALastMessageWithoutNewline(t *testing.T) {
	p, c := newRawPeer(t)
	go func() {
		_, _ = io.WriteString(p.conn, `{"jsonrpc":"2.0","id":3,"result":{}}`)
		_ = p.conn.(*net.UnixConn).CloseWrite()
	}()
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if msg.(*jsonrpc.Response).ID.Raw() != int64(3) {
		t.Fatalf("message = %#v", msg)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("then Read = %v, want io.EOF", err)
	}
}

// TestReadAfterCloseIsEOFEvenWithMessagesBuffered: after Close nothing
// more is delivered, neither the rest of a batch nor buffered lines.
func TestReadAfterCloseIsEOFEvenWithMessagesBuffered(t *testing.T) {
	p, c := newRawPeer(t)
	p.send(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n" +
		`{"jsonrpc":"2.0","method":"n"}` + "\n")
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if msg, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close = %#v, %v; want io.EOF", msg, err)
	}
}

// TestPeerEOFWaitsForAnswersToCallsRead: a client that writes its calls
// and closes its side still gets every answer; only then does Read report
// io.EOF (which makes the SDK cancel whatever is left).
func TestPeerEOFWaitsForAnswersToCallsRead(t *testing.T) {
	p, c := newRawPeer(t)
	ctx := context.Background()
	go func() {
		_, _ = io.WriteString(p.conn, `{"jsonrpc":"2.0","id":1,"method":"slow"}`+"\n"+
			`[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","method":"n"}]`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/x"}`+"\n")
		_ = p.conn.(*net.UnixConn).CloseWrite()
	}()
	for range 4 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eof := make(chan error, 1)
	go func() { _, err := c.Read(ctx); eof <- err }()
	answer := func(id int64) {
		t.Helper()
		if err := c.Write(ctx, &jsonrpc.Response{ID: mustID(t, id), Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	answer(1)
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v with call 2 unanswered", err)
	default:
	}
	answer(2)
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want io.EOF once both are answered", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting after every call was answered")
	}
	for _, want := range []string{`"id":1`, `"id":2`} {
		if got := p.line(); !strings.Contains(got, want) {
			t.Fatalf("peer got %s, want %s", got, want)
		}
	}
}

// TestCloseEndsTheWaitForAnswers: a call that is never answered does not
// hold the connection open past Close.
func TestCloseEndsTheWaitForAnswers(t *testing.T) {
	p, c := newRawPeer(t)
	go func() {
		_, _ = io.WriteString(p.conn, `{"jsonrpc":"2.0","id":1,"method":"never"}`+"\n")
		_ = p.conn.(*net.UnixConn).CloseWrite()
	}()
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); eof <- err }()
	_ = c.Close()
	select {
	case err := <-eof:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting after Close")
	}
}

func mustID(t *testing.T, v int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(v))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
