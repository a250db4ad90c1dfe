package prompts

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a small YAML reader for front matter. gopkg.in/yaml.v3 is not
// a direct requirement of the module, and front matter needs only a subset:
// block mappings and sequences, flow [..] and {..} on one line, plain,
// single- and double-quoted scalars, comments, and | / > block scalars.
// Anything outside the subset is an error, so the file is skipped with a
// warning rather than read wrongly.

// nodeKind tells the shape of a parsed YAML node.
type nodeKind int

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
)

// node is a parsed YAML value. A scalar that was absent or written as null
// or ~ has null set.
type node struct {
	kind   nodeKind
	line   int
	text   string // scalar value
	null   bool
	keys   []string // mapping keys in order
	values map[string]*node
	items  []*node
}

// yline is one raw front-matter line.
type yline struct {
	num    int    // 1-based line number in the file
	indent int    // leading spaces
	text   string // the line after its indentation
	raw    string // the whole line, for block scalars
}

// parser reads lines top-down; each block node consumes the lines it owns.
type parser struct {
	lines []yline
	pos   int
}

// parseYAML parses front matter whose first line is line firstLine of the
// file. An empty document is a null scalar.
func parseYAML(src string, firstLine int) (*node, error) {
	p := &parser{}
	for i, raw := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(raw, " ")
		if strings.HasPrefix(trimmed, "\t") && stripComment(trimmed) != "" {
			return nil, fmt.Errorf("line %d: tab in indentation", firstLine+i)
		}
		p.lines = append(p.lines, yline{num: firstLine + i, indent: len(raw) - len(trimmed), text: trimmed, raw: raw})
	}
	p.skipBlank()
	if p.eof() {
		return &node{kind: scalarNode, null: true, line: firstLine}, nil
	}
	n, err := p.block(p.cur().indent)
	if err != nil {
		return nil, err
	}
	if p.skipBlank(); !p.eof() {
		return nil, fmt.Errorf("line %d: unexpected content", p.cur().num)
	}
	return n, nil
}

func (p *parser) eof() bool   { return p.pos >= len(p.lines) }
func (p *parser) cur() *yline { return &p.lines[p.pos] }
func (p *parser) skipBlank() { // blank and comment-only lines
	for !p.eof() && stripComment(p.cur().text) == "" {
		p.pos++
	}
}

// block parses the mapping or sequence that starts on the current line at
// column indent.
func (p *parser) block(indent int) (*node, error) {
	if isSeqItem(p.cur().text) {
		return p.seq(indent)
	}
	return p.mapping(indent)
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

func (p *parser) seq(indent int) (*node, error) {
	n := &node{kind: seqNode, line: p.cur().num}
	for p.skipBlank(); !p.eof(); p.skipBlank() {
		l := p.cur()
		if l.indent < indent || !isSeqItem(l.text) {
			break
		}
		if l.indent > indent {
			return nil, fmt.Errorf("line %d: unexpected indentation", l.num)
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		if stripComment(rest) == "" {
			p.pos++
			item, err := p.nested(indent, false)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
			continue
		}
		// "- key: v" or "- - x": the item is a block starting at the
		// column of its first character, so re-read this line from there.
		if isSeqItem(rest) || hasMapKey(rest) {
			l.indent += len(l.text) - len(rest)
			l.text = rest
			item, err := p.block(l.indent)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
			continue
		}
		item, err := p.inlineValue(rest, indent)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, item)
	}
	return n, nil
}

func (p *parser) mapping(indent int) (*node, error) {
	n := &node{kind: mapNode, line: p.cur().num, values: map[string]*node{}}
	for p.skipBlank(); !p.eof(); p.skipBlank() {
		l := p.cur()
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, fmt.Errorf("line %d: unexpected indentation", l.num)
		}
		if isSeqItem(l.text) {
			return nil, fmt.Errorf("line %d: sequence item where a key was expected", l.num)
		}
		key, rest, err := splitKey(l.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", l.num, err)
		}
		if _, dup := n.values[key]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", l.num, key)
		}
		var v *node
		if stripComment(rest) == "" {
			p.pos++
			v, err = p.nested(indent, true)
		} else {
			v, err = p.inlineValue(rest, indent)
		}
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key)
		n.values[key] = v
	}
	return n, nil
}

// nested parses the value of a key or "-" whose own line is empty: a block
// on the following, deeper lines (or, for a key, a sequence at the key's
// column), else null.
func (p *parser) nested(parent int, seqAtSameIndent bool) (*node, error) {
	p.skipBlank()
	if !p.eof() {
		l := p.cur()
		if l.indent > parent || (seqAtSameIndent && l.indent == parent && isSeqItem(l.text)) {
			return p.block(l.indent)
		}
	}
	return &node{kind: scalarNode, null: true}, nil
}

// inlineValue parses the text after "key:" or "- " on the current line and
// consumes that line (and any continuation lines of a plain or block
// scalar).
func (p *parser) inlineValue(rest string, parent int) (*node, error) {
	l := p.cur()
	p.pos++
	switch rest[0] {
	case '|', '>':
		return p.blockScalar(rest, parent, l.num)
	case '[', '{':
		f := &flow{s: stripComment(rest), line: l.num}
		v, err := f.value()
		if err != nil {
			return nil, err
		}
		if f.skipSpace(); f.i < len(f.s) {
			return nil, fmt.Errorf("line %d: unexpected %q after flow collection", l.num, f.s[f.i:])
		}
		return v, nil
	case '"', '\'':
		text, tail, err := quoted(rest)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", l.num, err)
		}
		if stripComment(tail) != "" {
			return nil, fmt.Errorf("line %d: unexpected %q after quoted string", l.num, tail)
		}
		return &node{kind: scalarNode, text: text, line: l.num}, nil
	}
	text := stripComment(rest)
	// A plain scalar may continue on deeper lines; they fold into spaces.
	for !p.eof() && p.cur().indent > parent && stripComment(p.cur().text) != "" {
		more := stripComment(p.cur().text)
		if strings.Contains(more, ": ") || strings.HasSuffix(more, ":") {
			// YAML forbids this; it is almost always a mis-indented key.
			return nil, fmt.Errorf("line %d: unexpected indentation", p.cur().num)
		}
		text += " " + more
		p.pos++
	}
	return plain(text, l.num), nil
}

func plain(text string, line int) *node {
	switch text {
	case "", "~", "null", "Null", "NULL":
		return &node{kind: scalarNode, null: true, line: line}
	}
	return &node{kind: scalarNode, text: text, line: line}
}

// blockScalar reads a | (literal) or > (folded) scalar whose lines are
// deeper than parent. Chomping indicators - and + are honoured; explicit
// indentation indicators are not supported.
func (p *parser) blockScalar(header string, parent, num int) (*node, error) {
	h := stripComment(header)
	style, chomp := h[0], ""
	if len(h) > 1 {
		chomp = h[1:]
	}
	if chomp != "" && chomp != "-" && chomp != "+" {
		return nil, fmt.Errorf("line %d: unsupported block scalar header %q", num, h)
	}
	var lines []string
	content := -1
	for !p.eof() {
		l := p.cur()
		blank := strings.TrimSpace(l.raw) == ""
		if !blank && l.indent <= parent {
			break
		}
		if !blank && content < 0 {
			content = l.indent
		}
		if !blank && l.indent < content {
			return nil, fmt.Errorf("line %d: block scalar line less indented than its first line", l.num)
		}
		if blank {
			lines = append(lines, "")
		} else {
			lines = append(lines, l.raw[content:])
		}
		p.pos++
	}
	body := len(lines)
	for body > 0 && lines[body-1] == "" {
		body--
	}
	var b strings.Builder
	for i, s := range lines[:body] {
		if i > 0 {
			// Folding: adjacent text lines join with a space, and the break
			// before a run of blank lines is dropped (each blank is one \n).
			folded := style == '>' && lines[i-1] != "" && !strings.HasPrefix(s, " ") && !strings.HasPrefix(lines[i-1], " ")
			switch {
			case folded && s != "":
				b.WriteByte(' ')
			case folded && s == "":
			default:
				b.WriteByte('\n')
			}
		}
		b.WriteString(s)
	}
	text := b.String()
	switch chomp {
	case "-":
	case "+":
		text += strings.Repeat("\n", len(lines)-body+1)
	default:
		if body > 0 {
			text += "\n"
		}
	}
	return &node{kind: scalarNode, text: text, line: num}, nil
}

// splitKey splits "key: rest" (or "key:") at the first ": " outside quotes.
func splitKey(text string) (key, rest string, err error) {
	if text[0] == '"' || text[0] == '\'' {
		k, tail, err := quoted(text)
		if err != nil {
			return "", "", err
		}
		if tail == ":" || strings.HasPrefix(tail, ": ") {
			return k, strings.TrimLeft(tail[1:], " "), nil
		}
		return "", "", fmt.Errorf("expected ':' after key %q", k)
	}
	if strings.HasPrefix(text, "[") || strings.HasPrefix(text, "{") {
		return "", "", fmt.Errorf("unsupported key %q", text)
	}
	s := stripComment(text)
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			k := strings.TrimRight(s[:i], " ")
			if k == "" {
				return "", "", fmt.Errorf("empty key")
			}
			return k, strings.TrimLeft(s[i+1:], " "), nil
		}
	}
	return "", "", fmt.Errorf("expected \"key: value\", got %q", s)
}

// hasMapKey reports whether text starts a "key: value" entry.
func hasMapKey(text string) bool {
	if text[0] == '[' || text[0] == '{' || text[0] == '|' || text[0] == '>' {
		return false
	}
	_, _, err := splitKey(text)
	return err == nil
}

// stripComment removes a trailing " # comment" outside quotes and trims
// spaces. Quotes count only where a scalar can begin, so "don't" stays.
func stripComment(s string) string {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'':
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
				} else {
					q = 0
				}
			}
		case q == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				q = 0
			}
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" :[{,-", s[i-1]) >= 0):
			q = c
		}
	}
	return strings.TrimSpace(s)
}

// quoted reads a quoted scalar at the start of s and returns its value and
// the text after the closing quote.
func quoted(s string) (text, tail string, err error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), strings.TrimSpace(s[i+1:]), nil
		case q == '"' && c == '"':
			return b.String(), strings.TrimSpace(s[i+1:]), nil
		case q == '"' && c == '\\':
			n, err := escape(s[i+1:], &b)
			if err != nil {
				return "", "", err
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated quoted string")
}

// escape decodes one double-quote escape (the text after the backslash) and
// returns how many bytes it used.
func escape(s string, b *strings.Builder) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("unterminated quoted string")
	}
	simple := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", '0': "\x00", '"': "\"", '\\': "\\", '/': "/", ' ': " ", 'e': "\x1b"}
	if v, ok := simple[s[0]]; ok {
		b.WriteString(v)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, fmt.Errorf("invalid escape \\%c", s[0])
	}
	r, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(r)) {
		return 0, fmt.Errorf("invalid escape \\%s", s[:1+width])
	}
	b.WriteRune(rune(r))
	return 1 + width, nil
}

// flow parses a one-line flow collection: [a, b], {k: v}, nested.
type flow struct {
	s    string
	i    int
	line int
}

func (f *flow) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", f.line, fmt.Sprintf(format, args...))
}

func (f *flow) skipSpace() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

func (f *flow) value() (*node, error) {
	f.skipSpace()
	if f.i >= len(f.s) {
		return nil, f.errorf("unterminated flow collection")
	}
	switch f.s[f.i] {
	case '[':
		return f.collection(']')
	case '{':
		return f.collection('}')
	case '"', '\'':
		text, _, err := quoted(f.s[f.i:])
		if err != nil {
			return nil, f.errorf("%v", err)
		}
		// Advance past the closing quote: find it by re-measuring.
		f.i += quotedLen(f.s[f.i:])
		return &node{kind: scalarNode, text: text, line: f.line}, nil
	}
	start := f.i
	for f.i < len(f.s) && strings.IndexByte(",]}", f.s[f.i]) < 0 && !(f.s[f.i] == ':' && (f.i+1 == len(f.s) || strings.IndexByte(" ,]}", f.s[f.i+1]) >= 0)) {
		f.i++
	}
	return plain(strings.TrimSpace(f.s[start:f.i]), f.line), nil
}

// quotedLen returns the length of the quoted scalar at the start of s,
// quotes included; s is known to hold a terminated one.
func quotedLen(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return len(s)
}

func (f *flow) collection(end byte) (*node, error) {
	n := &node{kind: seqNode, line: f.line}
	if end == '}' {
		n = &node{kind: mapNode, line: f.line, values: map[string]*node{}}
	}
	f.i++ // the opening bracket
	for {
		f.skipSpace()
		if f.i >= len(f.s) {
			return nil, f.errorf("unterminated flow collection")
		}
		if f.s[f.i] == end {
			f.i++
			return n, nil
		}
		v, err := f.value()
		if err != nil {
			return nil, err
		}
		if f.skipSpace(); end == '}' {
			if v.kind != scalarNode || v.null {
				return nil, f.errorf("invalid key in flow mapping")
			}
			val := &node{kind: scalarNode, null: true, line: f.line} // {name} means name: null
			if f.i < len(f.s) && f.s[f.i] == ':' {
				f.i++
				if val, err = f.value(); err != nil {
					return nil, err
				}
				f.skipSpace()
			}
			if _, dup := n.values[v.text]; dup {
				return nil, f.errorf("duplicate key %q", v.text)
			}
			n.keys = append(n.keys, v.text)
			n.values[v.text] = val
		} else {
			n.items = append(n.items, v)
		}
		if f.i < len(f.s) && f.s[f.i] == ',' {
			f.i++
			continue
		}
		if f.i < len(f.s) && f.s[f.i] == end {
			continue
		}
		return nil, f.errorf("expected ',' or %q in flow collection", end)
	}
}
