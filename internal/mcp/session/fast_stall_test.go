package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/harness-dev/harness/internal/fdtest"
)

// rawSession is a session the test speaks to line by line, without a
// go-sdk client: it can send calls and not read their answers.
type rawSession struct {
	t      *testing.T
	conn   net.Conn
	r      *bufio.Reader
	served chan error
}

// rawConnect serves a session on a socket pair and initializes it by hand.
func (fe *fastEnv) rawConnect(t *testing.T, id Identity) *rawSession {
	t.Helper()
	server, client := fdtest.SocketPair(t)
	rs := &rawSession{t: t, conn: client, r: bufio.NewReaderSize(client, 64<<10), served: make(chan error, 1)}
	go func() { rs.served <- fe.m.Serve(context.Background(), server, id) }()
	rs.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if line := rs.line(); !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize answered %s", line)
	}
	rs.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	t.Cleanup(func() {
		_ = client.Close()
		select {
		case <-rs.served:
		case <-time.After(waitFor):
			t.Error("Serve did not return after the raw client closed")
		}
	})
	return rs
}

func (rs *rawSession) send(line string) {
	rs.t.Helper()
	_ = rs.conn.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(rs.conn, line+"\n"); err != nil {
		rs.t.Fatalf("raw client write: %v", err)
	}
}

func (rs *rawSession) line() string {
	rs.t.Helper()
	_ = rs.conn.SetReadDeadline(time.Now().Add(waitFor))
	line, err := rs.r.ReadString('\n')
	if err != nil {
		rs.t.Fatalf("raw client read: %v", err)
	}
	return line
}

// waitRecords waits until the call log has n records of tool.
func (fe *fastEnv) waitRecords(t *testing.T, tool string, n int, what string) {
	t.Helper()
	deadline := time.After(waitFor)
	for fe.rec.count(tool) < n {
		select {
		case <-fe.rec.added:
		case <-deadline:
			t.Fatalf("%s: %d of %d calls of %s recorded", what, fe.rec.count(tool), n, tool)
		}
	}
}

// TestScenario_AClientThatStopsReadingStallsNoOtherSession: the answers
// of calls forwarded as bytes are written by the upstream connection's
// reader, which every session calling that upstream shares. A client that
// sends calls and stops reading fills its socket; its answers wait for it
// (whole, and every one of them), while the upstream's reader goes on
// and another session's calls to the same upstream are answered at once.
func TestScenario_AClientThatStopsReadingStallsNoOtherSession(t *testing.T) {
	fe := newFastEnv(t, true)
	fe.auth.SetAllowed("web", "read")
	stuck := fe.rawConnect(t, Identity{Harness: "web"})
	const n = 400 // answers of 3 KB each: several times what the socket holds
	for i := 1; i <= n; i++ {
		stuck.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__kb","arguments":{}}}`, i))
	}
	// Each call's record is made on the upstream's reader before its
	// answer is written: all n means the reader never waited on the
	// client that does not read.
	fe.waitRecords(t, "up__kb", n, "the stuck client's calls")

	cs, _ := fe.connect(t, Identity{Harness: "web"})
	for i := range 20 {
		want := fmt.Sprintf("other session %d", i)
		if got := text(t, call(t, cs, "up__echo", fmt.Sprintf(`{"text":%q}`, want))); got != want {
			t.Fatalf("the other session's call %d answered %q", i, got)
		}
	}

	seen := map[int]bool{}
	for len(seen) < n {
		var a struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		line := stuck.line()
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %d is not whole JSON (%v): %.200s", len(seen)+1, err, line)
		}
		if seen[a.ID] || a.ID < 1 || a.ID > n || len(a.Result.Content) != 1 || len(a.Result.Content[0].Text) != 3000 {
			t.Fatalf("answer for id %d (seen before: %v): %.200s", a.ID, seen[a.ID], line)
		}
		seen[a.ID] = true
	}
}

// TestScenario_AnUpstreamThatStopsReadingStallsNoOtherRequest: a call is
// written upstream by the session's reader. An upstream that stops
// reading its stdin fills its pipe; the session's reader goes on, so the
// session's other requests (a facade tool, a cancellation) are served,
// and the calls waiting for the upstream are answered once it reads
// again.
func TestScenario_AnUpstreamThatStopsReadingStallsNoOtherRequest(t *testing.T) {
	fe := newFastEnv(t, true)
	fe.auth.SetAllowed("web", "read")
	rs := fe.rawConnect(t, Identity{Harness: "web"})
	fe.gate.close()
	// The gate holds back the upstream's next read; the one in progress
	// may take one more chunk. 200 calls of 3 KB each are 600 KB: far
	// more than a pipe holds.
	arg := strings.Repeat("a", 3000)
	const n = 200
	before := fe.b.FastCalls()
	for i := 1; i <= n; i++ {
		rs.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":%q}}}`, i, arg))
	}
	rs.send(`{"jsonrpc":"2.0","id":"list","method":"tools/call","params":{"name":"harness_list","arguments":{}}}`)
	line := rs.line()
	if !strings.Contains(line, `"id":"list"`) {
		t.Fatalf("with the upstream not reading, the first answer was %.200s, want harness_list's", line)
	}
	if got := fe.b.FastCalls() - before; got != n {
		t.Fatalf("%d calls forwarded as bytes by the time harness_list answered, want %d", got, n)
	}
	fe.gate.open()
	seen := map[string]bool{}
	for len(seen) < n {
		line := rs.line()
		var a struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != arg {
			t.Fatalf("answer %d (%v): %.200s", len(seen)+1, err, line)
		}
		seen[string(a.ID)] = true
	}
}
