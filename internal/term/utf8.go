package term

import (
	"bytes"

	"github.com/charmbracelet/x/ansi/parser"
)

// UTF-8 before the parser. x/vt's parser (x/ansi v0.11.9) reads bytes, not
// characters, wherever it is not printing: inside an OSC or DCS string it
// takes the byte 0x9C for ST, the C1 string terminator, even as the middle
// byte of a UTF-8 character, and inside SOS/PM/APC strings and DCS
// parameters any byte of 0x80..0xFF starts a character to print or a C1
// control. So Claude Code's title "\e]0;✳ Claude Code\a" (✳ is E2 9C B3)
// ended at the 9C and printed " Claude Code" wherever the cursor was: on
// the header row, or on the input box, whose blanks Claude Code skips with
// cursor moves, so "Make the file" read "MakeutheCfile" (the 'u' and the
// second 'C' of " Claude Code" left in the skipped cells). And a character
// cut short (a lead byte followed by ESC) swallowed the ESC and '[' of the
// next sequence as its own bytes, printing the sequence's final byte.
//
// A terminal in UTF-8 mode decodes characters first and parses controls
// among them; the filter does the same in front of both parsers (its twin
// and the emulator's):
//   - a byte that begins no valid character, and a character cut short by
//     a byte that cannot continue it, become U+FFFD, which is what the
//     program's own terminal shows (so a lone 0x9B or 0x9D is no CSI or
//     OSC introducer, as in every UTF-8 terminal);
//   - a whole character is handed on only once all its bytes are here;
//   - inside an OSC or DCS string, a character with a 9C byte is handed
//     on as U+FFFD (the title is taken from the string as written, see
//     clamp.oscDone); inside SOS/PM/APC strings and DCS parameters, which
//     carry ASCII only, a character is left out.

// replacement is U+FFFD, which has no byte the parser takes for a control.
var replacement = []byte("\uFFFD")

// decode takes the next byte of output and appends what the emulator
// should be given for it.
func (c *clamp) decode(out []byte, b byte) []byte {
	if c.un > 0 {
		if b >= c.ulo && b <= c.uhi {
			c.u[c.un] = b
			c.un++
			c.ulo, c.uhi = 0x80, 0xbf
			if c.un < c.uneed {
				return out
			}
			n := c.un
			c.un = 0
			return c.char(out, c.u[:n])
		}
		// Cut short: the character is invalid, b starts afresh.
		c.un = 0
		out = c.char(out, replacement)
	}
	// The ranges of valid lead and second bytes (RFC 3629), as the
	// Unicode standard's "maximal subpart" rule reads them.
	switch {
	case b < 0x80:
		return c.step(out, b)
	case b >= 0xc2 && b <= 0xdf:
		c.begin(b, 2, 0x80, 0xbf)
	case b == 0xe0:
		c.begin(b, 3, 0xa0, 0xbf)
	case b == 0xed:
		c.begin(b, 3, 0x80, 0x9f)
	case b >= 0xe1 && b <= 0xef:
		c.begin(b, 3, 0x80, 0xbf)
	case b == 0xf0:
		c.begin(b, 4, 0x90, 0xbf)
	case b >= 0xf1 && b <= 0xf3:
		c.begin(b, 4, 0x80, 0xbf)
	case b == 0xf4:
		c.begin(b, 4, 0x80, 0x8f)
	default: // a continuation byte without a lead, C0/C1 overlongs, F5..FF
		return c.char(out, replacement)
	}
	return out
}

// begin holds the lead byte of a character of n bytes whose second byte
// must be in lo..hi.
func (c *clamp) begin(b byte, n int, lo, hi byte) {
	c.u[0], c.un, c.uneed, c.ulo, c.uhi = b, 1, n, lo, hi
}

// char hands on one whole character (or U+FFFD), in the form the parser's
// state can take.
func (c *clamp) char(out, u []byte) []byte {
	switch c.p.State() {
	case parser.OscStringState, parser.DcsStringState:
		if c.p.State() == parser.OscStringState {
			c.keepOSC(u)
		}
		if bytes.IndexByte(u, 0x9c) >= 0 {
			u = replacement
		}
	case parser.SosStringState, parser.PmStringState, parser.ApcStringState,
		parser.DcsEntryState, parser.DcsParamState, parser.DcsIntermediateState:
		return out
	}
	for _, b := range u {
		out = c.step(out, b)
	}
	return out
}

// keepOSC adds to the OSC string being read, as the program wrote it,
// whole characters up to the emulator's bound on a string.
func (c *clamp) keepOSC(u []byte) {
	if len(c.osc)+len(u) <= maxStringData {
		c.osc = append(c.osc, u...)
	}
}

func (c *clamp) keepOSCByte(b byte) {
	if len(c.osc) < maxStringData {
		c.osc = append(c.osc, b)
	}
}

// oscDone reads the OSC string just ended as the emulator does (x/vt
// handleTitle): "0;title" or "2;title", with no other ';', sets the title.
func (c *clamp) oscDone() {
	cmd, i := -1, 0
	for ; i < len(c.osc) && c.osc[i] >= '0' && c.osc[i] <= '9' && cmd < 1000; i++ {
		cmd = max(cmd, 0)*10 + int(c.osc[i]-'0')
	}
	if cmd != 0 && cmd != 2 {
		return
	}
	parts := bytes.Split(c.osc, []byte{';'})
	if len(parts) != 2 {
		return
	}
	c.title, c.titled = string(parts[1]), true
}

// takeTitle returns the title the output fed since the last call set, if
// it set one.
func (c *clamp) takeTitle() (string, bool) {
	t, ok := c.title, c.titled
	c.title, c.titled = "", false
	return t, ok
}
