// Package termtest is a child program for the tests of the terminals at
// every layer (the supervisor's, and the CLI's end to end): it draws the
// way TUI agents do, and says what a reader must get from it.
package termtest

import (
	"fmt"
	"io"
	"time"
)

// DrawTUI writes to w (a PTY) what TUI agents write: words placed with
// cursor-forward moves instead of spaces, a CR-overwritten progress bar,
// an alternate-screen dialog redrawn 30 times with a selection that moves
// once, wide and combining characters; then "done". It takes about 2 s.
func DrawTUI(w io.Writer) {
	out := func(s string) { _, _ = io.WriteString(w, s) }
	out("\x1b[2G\x1b[38;5;211mUnable\x1b[9Gto\x1b[12Gconnect\x1b[39m\r\n")
	for i := 0; i <= 100; i += 25 {
		out(fmt.Sprintf("\rfetch %3d%%", i))
		time.Sleep(150 * time.Millisecond)
	}
	out("\r\n\x1b[?1049h\x1b[?25l")
	for i := range 30 {
		sel := 1 + i/20 // the selection moves once
		out("\x1b[H\x1b[2J\x1b[2;3HSign in")
		for j, s := range []string{"With ChatGPT", "With a key"} {
			mark := " "
			if j+1 == sel {
				mark = ">"
			}
			out(fmt.Sprintf("\x1b[%d;3H%s %d. %s", 4+j, mark, j+1, s))
		}
		time.Sleep(20 * time.Millisecond)
		if i == 19 {
			time.Sleep(400 * time.Millisecond)
		}
	}
	time.Sleep(400 * time.Millisecond)
	out("\x1b[?1049l\x1b[?25h")
	out("日本語 e\u0301 ok\r\ndone\r\n")
}

// TUIRows are the first rows of the main screen once DrawTUI is done
// (the fifth one empty; the cursor below "done", visible).
var TUIRows = []string{" Unable to connect", "fetch 100%", "日本語 e\u0301 ok", "done", ""}

// TUIColour is the SGR sequence row 0 keeps in an ANSI snapshot.
const TUIColour = "\x1b[38;5;211m"

// TUIEntries are DrawTUI's activity entries: each line once, as the
// screen showed it, the progress bar with its final text, the dialog in
// its two states however many frames were drawn.
var TUIEntries = []string{" Unable to connect", "fetch 100%", "  Sign in", "  > 1. With ChatGPT", "    2. With a key",
	"    1. With ChatGPT", "  > 2. With a key", "日本語 e\u0301 ok", "done"}
