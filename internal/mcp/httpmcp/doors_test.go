package httpmcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawConn dials the endpoint over plain TCP, to see what the server does to
// the connection itself.
func (e *env) rawConn(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", e.addr, waitFor)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitFor)); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// rawExchange sends req on a new raw connection and reads the answer.
func (e *env) rawExchange(t *testing.T, name, req string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := e.rawConn(t)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, c, br
}

func post(host, path, extra, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n%s", path, host, len(body), extra, body)
}

// closedByServer reports whether the server closed c (the next read is EOF
// rather than the read deadline).
func closedByServer(t *testing.T, c net.Conn, br *bufio.Reader) bool {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(waitFor)); err != nil {
		t.Fatal(err)
	}
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// TestRefusalClosesTheConnection: a refused client used to keep its
// keep-alive connection (and a daemon descriptor) for as long as it liked;
// 110 of them starved the daemon. Every refusal now closes.
func TestRefusalClosesTheConnection(t *testing.T) {
	e := newEnv(t)
	for name, req := range map[string]string{
		"no token":       post(e.addr, Path, "", initBody),
		"wrong token":    post(e.addr, Path, "Authorization: Bearer nope\r\n", initBody),
		"foreign host":   post("evil.example", Path, "Authorization: Bearer "+operatorToken+"\r\n", initBody),
		"unknown path":   post(e.addr, "/", "", initBody),
		"foreign origin": post(e.addr, Path, "Origin: http://evil.example\r\nAuthorization: Bearer "+operatorToken+"\r\n", initBody),
	} {
		resp, c, br := e.rawExchange(t, name, req)
		if resp.StatusCode < 400 || !resp.Close {
			t.Errorf("%s: %d, Connection %q; want a refusal that closes", name, resp.StatusCode, resp.Header.Get("Connection"))
		}
		if !closedByServer(t, c, br) {
			t.Errorf("%s: the server kept the connection open after refusing", name)
		}
	}

	// An accepted request keeps its connection for the next one.
	c, br := e.rawConn(t)
	io.WriteString(c, post(e.addr, Path, "Authorization: Bearer "+operatorToken+"\r\n", initBody))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("authenticated initialize: %d, close=%v", resp.StatusCode, resp.Close)
	}
}

// TestSlowBodyIsCutOff: a body that stops arriving is refused after the
// body timeout instead of holding the connection forever.
func TestSlowBodyIsCutOff(t *testing.T) {
	e := newEnv(t, func(_ *Options, s *http.Server) { s.ReadTimeout = 200 * time.Millisecond })
	c, br := e.rawConn(t)
	full := post(e.addr, Path, "Authorization: Bearer "+operatorToken+"\r\n", initBody)
	start := time.Now()
	if _, err := io.WriteString(c, full[:len(full)-10]); err != nil { // the last 10 bytes never come
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !closedByServer(t, c, br) {
		t.Fatalf("stalled body: %d, want 400 and a closed connection", resp.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stalled body cut off after %v", d)
	}
}

// TestReadTimeoutDoesNotCutLongResponses: the read deadline is lifted once
// the body is in, so a call that outlasts it (a waiting tool call) still
// gets its answer, and a session's GET stream still carries notifications.
func TestReadTimeoutDoesNotCutLongResponses(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	e := newEnv(t, func(_ *Options, s *http.Server) { s.ReadTimeout = readTimeout })
	e.auth.Add("tok-web", "web", "read")
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: httpClient(t, "tok-web"), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	e.ops.SetDelay(5 * readTimeout)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "harness_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("a call longer than the read timeout: %+v, %v", res, err)
	}

	// The GET stream has been open for longer than the read timeout by now.
	e.auth.Add("tok-web", "web", "read", "write")
	e.sessions.Refresh()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no list_changed on the GET stream after the read timeout")
	}
}

// TestLimitListenerHoldsAtMostN: past the cap, Accept waits for a connection
// to close, and Close wakes a waiting Accept.
func TestLimitListenerHoldsAtMostN(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	accepted := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
		return c
	}
	// Two that speak (a silent one would make way for the third).
	var first, second net.Conn
	for _, got := range []*net.Conn{&first, &second} {
		if _, err := dial().Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		*got = <-accepted
		if _, err := (*got).Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	dial()
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a third connection was accepted past the cap of 2")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	select {
	case third := <-accepted:
		third.Close()
	case <-time.After(waitFor):
		t.Fatal("closing a connection did not free a slot")
	}
	second.Close()
	second.Close() // a second Close frees nothing more

	// Fill both slots again, then Close must wake the waiting Accept.
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		defer (<-accepted).Close()
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acceptErr:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("accept after close: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Close did not wake a waiting Accept")
	}
}

func TestDefaultMaxConnsIsBounded(t *testing.T) {
	if n := DefaultMaxConns(); n < minConns || n > maxConnsCeiling {
		t.Fatalf("DefaultMaxConns = %d", n)
	}
}

// TestNewServerBoundsEveryWait: no wait of the server is unbounded: headers,
// whole requests and idle keep-alive connections all time out.
func TestNewServerBoundsEveryWait(t *testing.T) {
	s := NewServer(http.NotFoundHandler(), nil)
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("header %v, read %v, idle %v: want all bounded", s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout)
	}
	if s.WriteTimeout != 0 {
		t.Fatalf("write timeout %v would cut SSE streams", s.WriteTimeout)
	}
}

// TestScenario_ADeclaredBodyOverTheLimitIs413: a request that declares
// 200 MB is refused 413 before its body is read (it got its connection
// closed with no status), from a client still sending.
func TestScenario_ADeclaredBodyOverTheLimitIs413(t *testing.T) {
	e := newEnv(t)
	c, br := e.rawConn(t)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", Path, e.addr, operatorToken, 200<<20)
	if _, err := c.Write([]byte(head + strings.Repeat("x", 64<<10))); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response to a 200 MB declared body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

// TestScenario_SilentConnectionsMakeWay: at the cap, a new connection takes
// the place of the oldest that has sent nothing; one that stays silent for
// SilentTimeout is closed anyway.
func TestScenario_SilentConnectionsMakeWay(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	silent1 := dial()
	<-accepted
	dial()
	<-accepted
	start := time.Now()
	if _, err := dial().Write([]byte("GET")); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-accepted:
		if _, err := c.Read(make([]byte, 3)); err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("a client waited behind silent connections at the cap")
	}
	// The oldest silent one was closed for it.
	silent1.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := silent1.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the oldest silent connection: %v, want closed", err)
	}
	t.Logf("served after %v", time.Since(start))
}

// TestScenario_AnEmptyHostIsRefusedInEveryForm: an empty Host header is
// refused, also when the request line names a loopback URL (the absolute
// form, where net/http takes the URL's host for the Host header), and so
// is a foreign Host behind such a URL.
func TestScenario_AnEmptyHostIsRefusedInEveryForm(t *testing.T) {
	e := newEnv(t)
	auth := "Authorization: Bearer " + operatorToken + "\r\n"
	for name, req := range map[string]string{
		"empty Host":                  post("", Path, auth, initBody),
		"no Host, HTTP/1.0":           strings.Replace(strings.Replace(post("", Path, auth, initBody), "HTTP/1.1", "HTTP/1.0", 1), "Host: \r\n", "", 1),
		"loopback URL, empty Host":    post("", "http://"+e.addr+Path, auth, initBody),
		"loopback URL, foreign Host":  post("evil.example", "http://"+e.addr+Path, auth, initBody),
		"loopback URL, loopback Host": post(e.addr, "http://"+e.addr+Path, auth, initBody),
	} {
		resp, _, _ := e.rawExchange(t, name, req)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
}
