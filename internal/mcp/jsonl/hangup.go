package jsonl

import (
	"time"

	"github.com/harness-dev/harness/internal/hangup"
)

// hangupPoll is how often a connection holding a peer's EOF back checks
// whether the peer is gone altogether.
const hangupPoll = 200 * time.Millisecond

// watchHangup, while the connection holds a peer's EOF back for answers
// it owes, stops that wait as soon as the peer is gone altogether: its
// calls are then cancelled (the SDK does so at EOF) and the session ends,
// instead of waiting forever on calls nobody will read. It returns a
// function that ends the watch.
func (c *Conn) watchHangup() (stop func()) {
	gone := hangup.Check(c.w)
	if gone == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(hangupPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if gone() {
					c.answered(nil, true)
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
