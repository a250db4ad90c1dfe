package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/harness-dev/harness/internal/fdtest"
)

// TestScenario_AWriteNeverWaitsForAPeerThatDoesNotRead: on a socket, a
// message that fits is written on the caller's goroutine (done has run
// when SendRaw returns); one the peer's buffer cannot take returns at once
// too, and is written whole once the peer reads, before the message sent
// after it, which does not cut into it.
func TestScenario_AWriteNeverWaitsForAPeerThatDoesNotRead(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	mc, err := (&Transport{Reader: a, Writer: a}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*Conn)
	t.Cleanup(func() { _ = c.Close() })
	if c.rawW == nil {
		t.Fatal("a socket's writes are not the non-waiting kind")
	}

	ran := false
	c.SendRaw([]byte(`{"small":1}`), func(err error) {
		if err != nil {
			t.Errorf("small write: %v", err)
		}
		ran = true
	})
	if !ran {
		t.Fatal("a message that fits was not written on the caller's goroutine")
	}

	big := `{"big":"` + strings.Repeat("b", 4<<20) + `"}`
	done := make(chan error, 2)
	start := time.Now()
	c.SendRaw([]byte(big), func(err error) { done <- err })
	c.SendRaw([]byte(`{"after":1}`), func(err error) { done <- err })
	if d := time.Since(start); d > time.Second {
		t.Fatalf("SendRaw waited %v for a peer that does not read", d)
	}
	select {
	case err := <-done:
		t.Fatalf("a 4 MiB message was written before the peer read anything (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}

	r := bufio.NewReaderSize(b, 64<<10)
	for _, want := range []string{`{"small":1}`, big, `{"after":1}`} {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(line, "\n"); got != want {
			t.Fatalf("peer read %.80q... (%d bytes), want %.80q... (%d bytes)", got, len(got), want, len(want))
		}
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// TestScenario_MessagesSentGoOutInTheOrderSent: messages sent while the
// peer is not reading (written at once, in part, or queued) reach it
// whole and in the order they were sent, even when the go-sdk's own
// writes take the lock between them.
func TestScenario_MessagesSentGoOutInTheOrderSent(t *testing.T) {
	a, b := fdtest.SocketPair(t)
	mc, err := (&Transport{Reader: a, Writer: a}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*Conn)
	t.Cleanup(func() { _ = c.Close() })
	const n = 300
	pad := strings.Repeat("p", 16<<10) // 300 x 16 KiB: far more than the socket holds
	done := make(chan error, n)
	sdk := make(chan error, 1)
	for i := range n {
		if i == n/3 {
			// The go-sdk writes too, holding the lock while the peer is stuck.
			go func() { sdk <- c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/sdk"}) }()
		}
		c.SendRaw([]byte(fmt.Sprintf(`{"seq":%d,"pad":%q}`, i, pad)), func(err error) { done <- err })
	}
	r := bufio.NewReaderSize(b, 64<<10)
	next := 0
	for next < n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "notifications/sdk") {
			continue
		}
		var m struct {
			Seq int    `json:"seq"`
			Pad string `json:"pad"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Pad != pad {
			t.Fatalf("message %d is not whole (%v): %.80q", next, err, line)
		}
		if m.Seq != next {
			t.Fatalf("message %d arrived where %d was due", m.Seq, next)
		}
		next++
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if err := <-sdk; err != nil {
		t.Fatalf("the go-sdk's write: %v", err)
	}
}
