// Package nowait reads and writes a descriptor without waiting and
// without telling the Go scheduler: each read or write asks the kernel
// not to wait (RWF_NOWAIT), whatever the descriptor's blocking mode, and
// goes in as a raw system call.
//
// Why (issue 35): every system call made the usual way (syscall.Syscall)
// passes through the runtime's entersyscall, and the first one after the
// process went idle wakes the runtime's monitor thread (sysmon), which
// then sleeps in 20 µs steps until it sees every processor idle again. A
// daemon that relays one call at a time goes idle between calls, so each
// call paid that wake-up, two to three more sleeps and a futex: a third
// of a byte relay's CPU on a 2-core machine. A raw system call that
// cannot wait needs no monitor: it never holds its thread.
//
// A call the kernel cannot make without waiting (a descriptor without
// RWF_NOWAIT support: a terminal, an old kernel's pipe) reports
// ErrUnsupported, and the caller goes the usual way.
package nowait

import "errors"

// ErrUnsupported is returned when the descriptor (or the system) cannot
// be read or written without waiting.
var ErrUnsupported = errors.New("nowait: not supported on this descriptor")
