// Package hangup tells whether nobody reads a stream any more: a socket
// whose peer closed, a pipe whose reader closed. MCP sessions use it to
// notice a client that went away while they still owe it answers, on
// either side of the socket (the daemon's session, the `harness mcp`
// bridge).
package hangup

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Check returns a function that reports whether w's reader is gone
// (POLLHUP or POLLERR on its descriptor, or the descriptor closed). A
// peer that only closed its writing side (a script that sent its requests
// and waits for the answers) is not gone. Check returns nil when w has no
// descriptor to ask (a net.Pipe, a bytes.Buffer).
func Check(w any) func() bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() bool {
		gone := false
		err := rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd)}} // no events: HUP and ERR are always reported
			if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
				gone = fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
			}
		})
		return gone || err != nil // a closed descriptor reaches nobody either
	}
}

// Poll is how often Watch checks.
const Poll = 200 * time.Millisecond

// Watch calls onGone once when w's reader is gone, checking every Poll,
// until stop is called. When w has no descriptor to ask (Check returns
// nil) nothing is watched and stop does nothing.
func Watch(w any, onGone func()) (stop func()) {
	gone := Check(w)
	if gone == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(Poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if gone() {
					onGone()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
