package jsonl

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

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
