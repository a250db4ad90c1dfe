package logs

import (
	"strings"
	"unicode/utf8"
)

// assembler turns a raw terminal byte stream into text lines. Its state (the
// escape parser, the pending line, a pending bare CR) survives between
// writes, so sequences and lines may be split anywhere.
type assembler struct {
	p    parser
	line []byte
	cr   bool // a CR was seen: text that follows overwrites the line, "\n" ends it
	max  int
}

// write feeds data and calls emit for every complete, non-blank line.
func (a *assembler) write(data []byte, emit func(string)) {
	for _, b := range data {
		switch a.p.feed(b) {
		case swallowed:
		case text:
			if a.cr {
				// Bare CR then text: the terminal went back to column 0
				// (progress bars); only what is drawn after it remains.
				a.line = a.line[:0]
				a.cr = false
			}
			a.line = append(a.line, b)
			if len(a.line) >= a.max {
				a.cut(emit)
			}
		case control:
			switch b {
			case '\n':
				a.flush(emit)
			case '\r':
				a.cr = true
			}
		}
	}
}

// flush emits the pending partial line, if any, and starts a new one. The
// parser state is kept: a sequence may continue in the next write.
func (a *assembler) flush(emit func(string)) {
	if len(a.line) > 0 {
		emitLine(a.line, emit)
	}
	a.line = a.line[:0]
	a.cr = false
}

// reset drops all state, for a new process whose output must not be read
// through the half-finished sequence of the previous one.
func (a *assembler) reset() {
	a.p.reset()
	a.line = a.line[:0]
	a.cr = false
}

// cut emits an over-long line's first piece, ending it on a rune boundary
// so a multi-byte character is not split across two entries.
func (a *assembler) cut(emit func(string)) {
	n := len(a.line)
	cut := n
	j := n - 1
	for j > 0 && n-j < utf8.UTFMax && !utf8.RuneStart(a.line[j]) {
		j--
	}
	if j > 0 && utf8.RuneStart(a.line[j]) && !utf8.FullRune(a.line[j:]) {
		cut = j
	}
	emitLine(a.line[:cut], emit)
	rest := copy(a.line, a.line[cut:])
	a.line = a.line[:rest]
}

// emitLine sanitises a line and emits it unless it is blank; trailing
// blanks are terminal padding, not content.
func emitLine(b []byte, emit func(string)) {
	s := strings.TrimRight(sanitize(b), " \t")
	if strings.TrimSpace(s) == "" {
		return
	}
	emit(s)
}
