package attachterm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harness-dev/harness/internal/api"
	"github.com/harness-dev/harness/internal/errcode"
)

// DefaultDetachKeys is Ctrl-], as telnet and docker have it.
const DefaultDetachKeys = "C-]"

// ParseDetachKeys reads a detach sequence: keys separated by commas, each
// C-x (x a letter or one of @[\]^_) or one printable character, as in
// "C-]" or "C-a,d".
func ParseDetachKeys(s string) ([]byte, error) {
	var seq []byte
	for _, k := range strings.Split(s, ",") {
		switch {
		case len(k) == 3 && (k[0] == 'C' || k[0] == 'c') && k[1] == '-' && (k[2]|0x20 >= 'a' && k[2]|0x20 <= 'z'):
			seq = append(seq, k[2]|0x20-'a'+1)
		case len(k) == 3 && (k[0] == 'C' || k[0] == 'c') && k[1] == '-' && strings.IndexByte(`@[\]^_`, k[2]) >= 0:
			seq = append(seq, k[2]-'@')
		case len(k) == 1 && k[0] > ' ' && k[0] < 0x7f:
			seq = append(seq, k[0])
		default:
			return nil, errcode.Errorf(errcode.InvalidArgument,
				"detach keys %q: want keys separated by commas, each C-x (a letter or @[\\]^_) or one printable character, like C-] or C-a,d", s)
		}
	}
	return seq, nil
}

// Stream is the daemon's side of an attachment (client.Attachment).
type Stream interface {
	Recv() ([]byte, *api.AttachEvent, error)
	Input(p []byte) error
	Resize(cols, rows int) error
	Close() error
}

// Options say how to attach.
type Options struct {
	Name     string
	ReadOnly bool   // keys other than the detach keys are dropped, sizes are not sent
	Detach   []byte // the detach sequence (ParseDetachKeys)
}

// Outcome is how an attachment ended: the viewer detached, or the unit
// ended (Ended is its last notice).
type Outcome struct {
	Detached bool
	Ended    *api.AttachEvent
}

// Run pumps the stream to the terminal and the terminal's keys to the
// stream until the viewer types the detach keys, the unit ends, the
// stream breaks or ctx ends (a signal: the terminal is restored all the
// same). winch delivers the terminal's size changes. The terminal must be
// in raw mode; Run puts back the modes the program may have switched on
// and closes the stream, not the terminal.
func Run(ctx context.Context, t *Terminal, s Stream, o Options, winch <-chan os.Signal) (Outcome, error) {
	return run(ctx, t, t, t.Size, s, o, winch)
}

// run is Run on any key reader and screen writer, for tests.
func run(ctx context.Context, keys io.Reader, screen io.Writer, size func() (int, int, error), s Stream, o Options, winch <-chan os.Signal) (Outcome, error) {
	if len(o.Detach) == 0 {
		o.Detach = []byte{0x1d}
	}
	modes := &modeTracker{}
	received := make(chan error, 1)
	var ended *api.AttachEvent
	resize := func() {
		if o.ReadOnly {
			return
		}
		if c, r, err := size(); err == nil && c > 0 && r > 0 {
			_ = s.Resize(c, r) // a broken stream shows up in Recv
		}
	}
	go func() {
		for {
			out, ev, err := s.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				received <- err
				return
			}
			if ev != nil {
				switch ev.Kind {
				case api.AttachRestarted:
					fmt.Fprintf(screen, "\r\n\x1b[m[harness: %s restarted: run %d]\r\n", o.Name, ev.RunID)
					resize() // the new run starts at its configured size
				case api.AttachNotice:
					fmt.Fprintf(screen, "\r\n\x1b[m[harness: %s]\r\n", ev.Message)
				case api.AttachEnded:
					ended = ev
				}
				continue
			}
			modes.see(out)
			if _, err := screen.Write(out); err != nil {
				received <- fmt.Errorf("attach: write to the terminal: %w", err)
				return
			}
		}
	}()
	// Closed on the detach keys; if the keys end without them, output
	// goes on showing until the stream ends.
	detached := make(chan struct{})
	go func() {
		if forwardKeys(keys, s, o) {
			close(detached)
		}
	}()

	var err error
	out := Outcome{}
loop:
	for {
		select {
		case err = <-received:
			out.Ended = ended
			break loop
		case <-detached:
			out.Detached = true
			break loop
		case <-winch:
			resize()
		case <-ctx.Done():
			break loop
		}
	}
	if cerr := s.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if out.Detached || ctx.Err() != nil {
		<-received // the stream is closed: its reader ends
	}
	_, _ = io.WriteString(screen, modes.reset())
	return out, err
}

// forwardKeys sends keys to the stream until the detach sequence (true)
// or the end of the keys (false). A read-only viewer's keys go nowhere.
// A partial detach sequence is held back until it is complete or broken.
func forwardKeys(keys io.Reader, s Stream, o Options) bool {
	buf := make([]byte, 4096)
	matched := 0
	for {
		n, err := keys.Read(buf)
		var send []byte
		for _, b := range buf[:n] {
			if b == o.Detach[matched] {
				matched++
				if matched == len(o.Detach) {
					if len(send) > 0 && !o.ReadOnly {
						_ = s.Input(send)
					}
					return true
				}
				continue
			}
			send = append(send, o.Detach[:matched]...)
			matched = 0
			if b == o.Detach[0] {
				matched = 1
				continue
			}
			send = append(send, b)
		}
		if len(send) > 0 && !o.ReadOnly {
			if s.Input(send) != nil {
				return false // the stream broke; Recv says why
			}
		}
		if err != nil {
			return false
		}
	}
}

// modeTracker follows whether the program put the viewer's terminal on
// its alternate screen, so detaching can leave it.
type modeTracker struct {
	alt  bool
	tail []byte // the end of the last output, for a sequence split across writes
}

var (
	altOn  = [][]byte{[]byte("\x1b[?1049h"), []byte("\x1b[?1047h"), []byte("\x1b[?47h")}
	altOff = [][]byte{[]byte("\x1b[?1049l"), []byte("\x1b[?1047l"), []byte("\x1b[?47l")}
)

func (m *modeTracker) see(out []byte) {
	b := append(m.tail, out...)
	on, off := lastOf(b, altOn), lastOf(b, altOff)
	if on > off {
		m.alt = true
	} else if off > on {
		m.alt = false
	}
	keep := min(len(b), 7)
	m.tail = append(m.tail[:0], b[len(b)-keep:]...)
}

func lastOf(b []byte, seqs [][]byte) int {
	last := -1
	for _, s := range seqs {
		last = max(last, bytes.LastIndex(b, s))
	}
	return last
}

// reset is what puts the viewer's terminal back for the shell: the main
// screen, plain colours, a visible cursor, and off every input mode a
// program commonly turns on (bracketed paste, application cursor keys
// and keypad, mouse reports, focus events, the kitty keyboard protocol).
func (m *modeTracker) reset() string {
	var b strings.Builder
	if m.alt {
		b.WriteString("\x1b[?1049l")
	}
	b.WriteString("\x1b[m\x1b[?25h\x1b[?2004l\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l\x1b[<u\r\n")
	return b.String()
}
