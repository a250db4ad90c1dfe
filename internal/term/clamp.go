package term

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// clamp rewrites the parameters of control sequences before the emulator
// sees them, so that no sequence costs more than the screen it acts on.
// x/vt v0.1.0 loops as many times as a count says (REP `x\e[99999999b`
// prints a hundred million cells, CHT/CBT/ECH walk as far), and Feed holds
// the Term's lock meanwhile: one such sequence froze every reader of the
// unit. Counts beyond the screen change nothing a reader can see (a cursor
// stops at the edge, a line can be erased or scrolled only once), so they
// are cut to the screen's size; every other parameter is cut to 65535, the
// largest one a terminal sequence means.
//
// The filter runs a parser of its own, the emulator's twin (same package,
// same transition table), a byte ahead of the emulator: bytes outside a CSI
// sequence pass through as they are; inside one, the introducer and C0
// controls pass at once (the emulator executes those within a sequence just
// the same), parameters and intermediates are held, and the sequence is
// written out again, clamped, when its final byte dispatches it. A sequence
// the twin abandons is abandoned in the emulator too. Nothing is buffered but
// the twin's 32 parameters, however long a sequence is (and the text of an
// OSC string, up to the emulator's own bound, for the title).
//
// Ahead of the twin, output is read as UTF-8 characters (see utf8.go).
type clamp struct {
	p          *ansi.Parser
	out        []byte // scratch for one Feed slice
	cols, rows int    // the screen of the current filter call

	// A character still arriving (utf8.go): its bytes, how many it
	// has and needs, and the range its next byte must be in.
	u         [4]byte
	un, uneed int
	ulo, uhi  byte
	osc       []byte // the OSC string being read, as written
	title     string // the last title set, for takeTitle
	titled    bool
}

func newClamp() *clamp {
	p := ansi.NewParser()
	p.SetDataSize(1) // strings (OSC, DCS...) pass through; the twin need not keep them
	return &clamp{p: p}
}

// reset forgets a half-read sequence: the emulator it fed was replaced.
func (c *clamp) reset() {
	c.p.Reset()
	c.un, c.osc, c.title, c.titled = 0, c.osc[:0], "", false
}

// maxParam bounds a parameter of a sequence that is no count on the screen.
const maxParam = parser.MaxParam

func inCSI(s parser.State) bool {
	return s == parser.CsiEntryState || s == parser.CsiParamState || s == parser.CsiIntermediateState
}

// filter returns p as the emulator should see it on a cols x rows screen.
// The result is valid until the next call.
func (c *clamp) filter(p []byte, cols, rows int) []byte {
	c.cols, c.rows = cols, rows
	out := c.out[:0]
	for _, b := range p {
		out = c.decode(out, b)
	}
	c.out = out[:0]
	return out
}

// step advances the twin by one byte (of a whole character, see decode)
// and appends what the emulator should be given for it.
func (c *clamp) step(out []byte, b byte) []byte {
	prev := c.p.State()
	act := c.p.Advance(b)
	cur := c.p.State()
	switch {
	case prev == parser.OscStringState && act == parser.PutAction && b < 0x80:
		c.keepOSCByte(b) // a character's bytes were kept whole by char
	case prev == parser.OscStringState && act == parser.DispatchAction:
		c.oscDone()
	case cur == parser.OscStringState && prev != cur:
		c.osc = c.osc[:0]
	}
	switch {
	case !inCSI(prev) && !inCSI(cur):
		out = append(out, b)
	case !inCSI(prev): // the introducer ('[' after ESC)
		out = append(out, b)
	case inCSI(cur):
		if act == parser.ExecuteAction || act == parser.ClearAction {
			out = append(out, b) // a C0 control inside, or a new CSI
		}
		// parameters, prefix and intermediates wait for the final byte
	case act == parser.DispatchAction:
		out = c.appendCSI(out, c.cols, c.rows)
	case cur == parser.GroundState && (act == parser.IgnoreAction || act == parser.NoneAction):
		// The twin dropped the sequence on a byte the emulator,
		// still at the sequence's start, would take as a parameter:
		// an intermediate and then a digit drops it there too.
		out = append(out, ' ', '0')
	default:
		out = append(out, b) // ESC, CAN, SUB, UTF-8: the same from any CSI state
	}
	return out
}

// appendCSI writes out the sequence the twin just dispatched (its
// introducer already went out): prefix, clamped parameters, intermediate,
// final byte.
func (c *clamp) appendCSI(out []byte, cols, rows int) []byte {
	cmd := ansi.Cmd(c.p.Command())
	if pre := cmd.Prefix(); pre != 0 {
		out = append(out, pre)
	}
	params := c.p.Params()
	for i, prm := range params {
		if v := prm.Param(-1); v >= 0 {
			out = strconv.AppendInt(out, int64(min(v, capOf(cmd, i, cols, rows))), 10)
		}
		switch {
		case prm.HasMore():
			out = append(out, ':')
		case i < len(params)-1:
			out = append(out, ';')
		}
	}
	if in := cmd.Intermediate(); in != 0 {
		out = append(out, in)
	}
	return append(out, cmd.Final())
}

// capOf is the largest value parameter i of cmd can usefully have on a
// cols x rows screen.
func capOf(cmd ansi.Cmd, i, cols, rows int) int {
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		return maxParam
	}
	switch cmd.Final() {
	case 'b', // REP: the rest of the line (a longer run wraps and scrolls, at several µs a cell)
		'@', 'P', 'X', // ICH, DCH, ECH
		'I', 'Z', // CHT, CBT
		'C', 'D', 'G', '`', 'a': // CUF, CUB, CHA, HPA, HPR
		return cols
	case 'A', 'B', 'E', 'F', 'd', 'e', // CUU, CUD, CNL, CPL, VPA, VPR
		'L', 'M', 'S', 'T', // IL, DL, SU, SD
		'r': // DECSTBM
		return rows
	case 'H', 'f': // CUP, HVP: row;column
		if i == 0 {
			return rows
		}
		return cols
	case 's': // DECSLRM (with left/right margins on)
		return cols
	}
	return maxParam
}
