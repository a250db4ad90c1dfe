package config

import (
	"strconv"
	"strings"
)

// The toml package records a position for every key but keeps it private
// (it only surfaces in decode errors, one at a time). Validation reports many
// errors, each with a line, so this file re-scans the source for positions.
// It runs only on text that toml has already accepted, so it can rely on the
// input being valid TOML; on anything else it still terminates and simply
// records fewer keys.

// keyID is the map key of a dotted key path in a positions table.
func keyID(path []string) string { return strings.Join(path, "\x00") }

// maxKeyDepth bounds the key paths recorded: the deepest key of the schema
// is harness.NAME.env.VAR, one more level names an unknown key, and
// recording every prefix of an absurdly deep dotted key would be quadratic.
const maxKeyDepth = 5

// positions maps a key path (keyID) to the 1-based line where it first
// appears: a table header, a key assignment, an inline-table key, or the
// first line that implicitly created a parent table.
type positions map[string]int

// line returns the line of path, or of its nearest recorded parent, or 1
// when nothing of the path was found (such as a key added by no line at all).
func (p positions) line(path []string) int {
	for n := min(len(path), maxKeyDepth); n > 0; n-- {
		if l, ok := p[keyID(path[:n])]; ok {
			return l
		}
	}
	return 1
}

// posScanner walks TOML source and fills a positions table.
type posScanner struct {
	src   string
	i     int
	lineI int // byte offset up to which newlines are counted in lineN
	lineN int // 1 + newlines in src[:lineI]
	pos   positions
}

// scanPositions returns the positions of every header and key in src.
func scanPositions(src string) positions {
	s := &posScanner{src: src, lineN: 1, pos: positions{}}
	if strings.HasPrefix(src, "\xef\xbb\xbf") { // toml skips a UTF-8 BOM too
		s.i, s.lineI = 3, 3
	}
	var table []string
	for {
		s.skipBlank(true)
		if s.eof() {
			return s.pos
		}
		start := s.i
		if s.src[s.i] == '[' {
			s.i++
			if !s.eof() && s.src[s.i] == '[' {
				s.i++
			}
			line := s.lineAt(start)
			table = s.readKey()
			s.record(table, line)
			for !s.eof() && s.src[s.i] == ']' {
				s.i++
			}
		} else {
			line := s.lineAt(start)
			key := append(append([]string(nil), table...), s.readKey()...)
			s.record(key, line)
			s.skipBlank(false)
			if !s.eof() && s.src[s.i] == '=' {
				s.i++
			}
			s.skipValue(key, 0)
		}
		if s.i == start { // never stall on input that isn't valid TOML
			s.i++
		}
	}
}

func (s *posScanner) eof() bool { return s.i >= len(s.src) }

// lineAt returns the line of byte offset i; offsets must not decrease
// between calls, which holds because the scanner only moves forward.
func (s *posScanner) lineAt(i int) int {
	if i > len(s.src) {
		i = len(s.src)
	}
	if i > s.lineI {
		s.lineN += strings.Count(s.src[s.lineI:i], "\n")
		s.lineI = i
	}
	return s.lineN
}

// record stores the line of path and of every parent not yet seen.
func (s *posScanner) record(path []string, line int) {
	for n := 1; n <= min(len(path), maxKeyDepth); n++ {
		id := keyID(path[:n])
		if _, ok := s.pos[id]; !ok {
			s.pos[id] = line
		}
	}
}

// skipBlank skips spaces, tabs and comments, and newlines when nl is set.
func (s *posScanner) skipBlank(nl bool) {
	for !s.eof() {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && nl:
			s.i++
		case c == '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

// readKey reads a possibly dotted key of bare and quoted parts and stops
// before '=', ']' or the end of the line.
func (s *posScanner) readKey() []string {
	var parts []string
	for {
		s.skipBlank(false)
		if s.eof() {
			return parts
		}
		switch c := s.src[s.i]; c {
		case '"':
			raw := s.readBasic()
			if v, err := strconv.Unquote(raw); err == nil {
				parts = append(parts, v)
			} else {
				parts = append(parts, strings.Trim(raw, `"`))
			}
		case '\'':
			parts = append(parts, strings.Trim(s.readLiteral(), "'"))
		case '=', ']', '\n', '}', ',':
			return parts
		default:
			start := s.i
			for !s.eof() && !strings.ContainsRune(" \t\r\n.=]}#,\"'", rune(s.src[s.i])) {
				s.i++
			}
			if s.i == start {
				s.i++
				continue
			}
			parts = append(parts, s.src[start:s.i])
		}
		s.skipBlank(false)
		if s.eof() || s.src[s.i] != '.' {
			return parts
		}
		s.i++
	}
}

// readBasic reads a single-line basic string and returns it with quotes.
func (s *posScanner) readBasic() string {
	start := s.i
	s.i++
	for !s.eof() && s.src[s.i] != '"' && s.src[s.i] != '\n' {
		if s.src[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	if !s.eof() && s.src[s.i] == '"' {
		s.i++
	}
	if s.i > len(s.src) {
		s.i = len(s.src)
	}
	return s.src[start:s.i]
}

// readLiteral reads a single-line literal string and returns it with quotes.
func (s *posScanner) readLiteral() string {
	start := s.i
	s.i++
	for !s.eof() && s.src[s.i] != '\'' && s.src[s.i] != '\n' {
		s.i++
	}
	if !s.eof() && s.src[s.i] == '\'' {
		s.i++
	}
	return s.src[start:s.i]
}

// skipMulti skips a multi-line string opened by delim ("""" or ”'),
// including up to two extra quotes that TOML allows before the closing one.
func (s *posScanner) skipMulti(delim string) {
	s.i += len(delim)
	for !s.eof() {
		if delim == `"""` && s.src[s.i] == '\\' {
			s.i += 2
			continue
		}
		if strings.HasPrefix(s.src[s.i:], delim) {
			s.i += len(delim)
			for n := 0; n < 2 && !s.eof() && s.src[s.i] == delim[0]; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	if s.i > len(s.src) {
		s.i = len(s.src)
	}
}

// skipValue skips one value; keys of inline tables are recorded under path.
func (s *posScanner) skipValue(path []string, depth int) {
	s.skipBlank(false)
	if s.eof() || depth > 1000 { // toml limits nesting too; this only guards the stack
		return
	}
	switch c := s.src[s.i]; {
	case strings.HasPrefix(s.src[s.i:], `"""`):
		s.skipMulti(`"""`)
	case strings.HasPrefix(s.src[s.i:], `'''`):
		s.skipMulti(`'''`)
	case c == '"':
		s.readBasic()
	case c == '\'':
		s.readLiteral()
	case c == '[':
		s.i++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			switch s.src[s.i] {
			case ']':
				s.i++
				return
			case ',':
				s.i++
			default:
				start := s.i
				s.skipValue(path, depth+1)
				if s.i == start {
					s.i++
				}
			}
		}
	case c == '{':
		s.i++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			switch s.src[s.i] {
			case '}':
				s.i++
				return
			case ',':
				s.i++
			default:
				start := s.i
				line := s.lineAt(start)
				key := append(append([]string(nil), path...), s.readKey()...)
				s.record(key, line)
				s.skipBlank(false)
				if !s.eof() && s.src[s.i] == '=' {
					s.i++
				}
				s.skipValue(key, depth+1)
				if s.i == start {
					s.i++
				}
			}
		}
	default:
		for !s.eof() && !strings.ContainsRune(",]}\n#", rune(s.src[s.i])) {
			s.i++
		}
	}
}

// tomlInput is src as the toml parser sees it, whose error offsets count
// from after a byte-order mark.
func tomlInput(src string) string {
	for _, bom := range []string{"\xef\xbb\xbf", "\xff\xfe", "\xfe\xff"} {
		if strings.HasPrefix(src, bom) {
			return src[len(bom):]
		}
	}
	return src
}

// headerAt reports whether the line holding byte offset off of src (a
// newline belongs to the line it ends) is a table header, and if so returns
// that line and the header's key as far as it is written.
func headerAt(src string, off int) (int, []string, bool) {
	if off < 0 || len(src) == 0 {
		return 0, nil, false
	}
	off = min(off, len(src)-1)
	start := strings.LastIndexByte(src[:off], '\n') + 1
	s := &posScanner{src: src, i: start, lineN: 1, pos: positions{}}
	s.skipBlank(false)
	if s.eof() || s.src[s.i] != '[' {
		return 0, nil, false
	}
	s.i++
	if !s.eof() && s.src[s.i] == '[' {
		s.i++
	}
	key := s.readKey()
	if len(key) == 0 {
		return 0, nil, false
	}
	return 1 + strings.Count(src[:start], "\n"), key, true
}
