// Package nowait reads and writes a stream's descriptor so that the
// kernel never waits: each read and write is a preadv2 or pwritev2 with
// RWF_NOWAIT, whatever the description's blocking mode, and a stream
// with nothing to read (or no room) parks its goroutine in the runtime's
// poller, as an *os.File or net.Conn does.
//
// Why: the daemon serves a handed-off session on the client's own open
// file descriptions, which it shares with the client and whoever else
// holds them. If one of them clears O_NONBLOCK mid-session, an *os.File
// read blocks in the kernel and holds one of the daemon's threads until
// the client writes again: a fleet of such agents cost a thread each.
// With RWF_NOWAIT the same read answers EAGAIN and the goroutine waits in
// the poller instead.
//
// The calls go through syscall.Syscall6, not RawSyscall6. A raw call skips
// the runtime's entersyscall, whose first call after the daemon went idle
// wakes the runtime's monitor thread: at one call at a time that saved a
// third of the daemon's CPU per call (docs/benchmarks.md). But RWF_NOWAIT
// only means "do not wait for data or room": a pipe read still sleeps on
// the pipe's mutex while the process at the other end holds it, for
// instance while that process faults on its own buffer. A raw call that
// sleeps keeps its processor, and the next stop-the-world of the
// collector waits for it: a peer could stall the whole daemon.
//
// A descriptor the kernel cannot read or write without waiting (a
// terminal, a FIFO, an old kernel's pipe) reports ErrUnsupported, and the
// caller goes the usual way.
package nowait

import "errors"

// ErrUnsupported is returned when the descriptor (or the system) cannot
// be read or written without waiting.
var ErrUnsupported = errors.New("nowait: not supported on this descriptor")
