package logs

import (
	"strings"
	"unicode/utf8"
)

// escState is where the escape-sequence parser stands between two bytes.
// Keeping it in a struct (rather than re-scanning a buffer) is what lets a
// sequence be split across Write calls.
type escState uint8

const (
	stGround   escState = iota
	stEsc               // after ESC
	stEscInter          // ESC followed by intermediate bytes (ESC ( B)
	stCSI               // ESC [ ... final
	stStr               // OSC, DCS, SOS, PM, APC body, until BEL or ST
	stStrEsc            // ESC seen inside a string: ST if '\' follows
)

// maxStrLen bounds an unterminated OSC/DCS string so a program that never
// terminates one cannot swallow all of its later output.
const maxStrLen = 1 << 16

// class says what a byte turned out to be once the parser has seen it.
type class uint8

const (
	swallowed class = iota // part of an escape sequence
	text                   // printable byte (or tab, or UTF-8 byte) that belongs to the line
	control                // a C0 control or DEL outside any sequence
)

// parser is a byte-at-a-time recogniser of ECMA-48 escape sequences.
type parser struct {
	st     escState
	strLen int
}

// reset forgets any half-read sequence.
func (p *parser) reset() { *p = parser{} }

// feed classifies b and advances the state. A byte that cannot continue the
// current sequence aborts it and is read as if in ground state, so a stray
// ESC never eats a newline.
func (p *parser) feed(b byte) class {
	switch p.st {
	case stEsc:
		switch {
		case b == '[':
			p.st = stCSI
			return swallowed
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			p.st, p.strLen = stStr, 0
			return swallowed
		case b == 0x1b:
			return swallowed
		case b >= 0x20 && b <= 0x2f:
			p.st = stEscInter
			return swallowed
		case b >= 0x30 && b <= 0x7e:
			p.st = stGround
			return swallowed
		}
		p.st = stGround
		return p.ground(b)
	case stEscInter:
		switch {
		case b >= 0x20 && b <= 0x2f:
			return swallowed
		case b >= 0x30 && b <= 0x7e:
			p.st = stGround
			return swallowed
		case b == 0x1b:
			p.st = stEsc
			return swallowed
		}
		p.st = stGround
		return p.ground(b)
	case stCSI:
		switch {
		case b >= 0x20 && b <= 0x3f:
			return swallowed
		case b >= 0x40 && b <= 0x7e:
			p.st = stGround
			return swallowed
		case b == 0x1b:
			p.st = stEsc
			return swallowed
		}
		p.st = stGround
		return p.ground(b)
	case stStr:
		switch b {
		case 0x07:
			p.st = stGround
			return swallowed
		case 0x1b:
			p.st = stStrEsc
			return swallowed
		case '\n':
			// No sane title or hyperlink spans lines; end the string so
			// the line structure survives a missing terminator.
			p.st = stGround
			return p.ground(b)
		}
		p.strLen++
		if p.strLen > maxStrLen {
			p.st = stGround
		}
		return swallowed
	case stStrEsc:
		if b == '\\' {
			p.st = stGround
			return swallowed
		}
		// ESC ends the string and starts a new sequence.
		p.st = stEsc
		return p.feed(b)
	}
	return p.ground(b)
}

func (p *parser) ground(b byte) class {
	if b == 0x1b {
		p.st = stEsc
		return swallowed
	}
	if b == '\t' || (b >= 0x20 && b != 0x7f) {
		return text
	}
	return control
}

// StripControl removes terminal control sequences from s: CSI sequences,
// OSC/DCS/SOS/PM/APC strings (terminated by BEL or ST), other ESC sequences,
// C0 controls except tab, DEL and C1 controls (U+0080–U+009F). Invalid UTF-8
// bytes become U+FFFD so the result is valid UTF-8 and StripControl is
// idempotent.
func StripControl(s string) string {
	var p parser
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if p.feed(s[i]) == text {
			b = append(b, s[i])
		}
	}
	return sanitize(b)
}

// StripControlLines is StripControl for text of several lines (an
// agent's answer, a transcript): each line is stripped, the newlines
// between them kept.
func StripControlLines(s string) string {
	if !strings.Contains(s, "\n") {
		return StripControl(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = StripControl(l)
	}
	return strings.Join(lines, "\n")
}

// sanitize makes b valid UTF-8 without C1 controls. Replacing each invalid
// byte (rather than deleting it) matters: deletion could join the halves of
// a C1 encoding around it and break idempotence.
func sanitize(b []byte) string {
	clean := utf8.Valid(b)
	if clean {
		for _, c := range b {
			if c == 0xc2 { // lead byte of U+0080–U+00BF, which includes C1
				clean = false
				break
			}
		}
	}
	if clean {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		case r >= 0x80 && r <= 0x9f:
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}
