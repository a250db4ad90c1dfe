package jsonl

import (
	"github.com/harness-dev/harness/internal/hangup"
)

// watchHangup, while the connection holds a peer's EOF back for answers
// it owes, stops that wait as soon as the peer is gone altogether: its
// calls are then cancelled (the SDK does so at EOF) and the session ends,
// instead of waiting forever on calls nobody will read. It returns a
// function that ends the watch.
func (c *Conn) watchHangup() (stop func()) {
	return hangup.Watch(c.w, func() { c.answered(nil, true) })
}
