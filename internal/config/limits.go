package config

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Bounds checked before a file reaches the TOML parser. Project files come
// from cloned repositories, and the parser's time and memory grow much faster
// than the input with nesting: a 2 MB deeply nested file took 38 s and
// 648 MB. Real configs are a few kilobytes, nested a few levels.
const (
	// MaxFileBytes is the largest config or project file accepted.
	MaxFileBytes = 1 << 20
	// MaxNesting is the deepest nesting accepted: table header parts,
	// dotted key parts, arrays and inline tables, counted together (the
	// schema's deepest key, harness.NAME.env.VAR, is 4).
	MaxNesting = 32
)

// errBounds is the cause of a file refused before parsing.
var errBounds = errors.New("config: file refused before parsing")

// readFile reads the file at path, but never more than MaxFileBytes+1
// bytes, so that checkBounds can refuse a larger one without it ever being
// in memory whole. Errors are the os package's, for callers to inspect.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // unwrapped: callers test fs.ErrNotExist and wrap it
	}
	defer f.Close() // read-only: a close error loses nothing
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// checkBounds refuses data larger than MaxFileBytes or nested deeper than
// MaxNesting, naming the file and, for nesting, the line.
func checkBounds(file string, data []byte) error {
	if len(data) > MaxFileBytes {
		return &Error{File: file, err: errBounds,
			Msg: fmt.Sprintf("larger than %d bytes (1 MiB), the most a config file may hold; refused before parsing", MaxFileBytes)}
	}
	if line, ok := nestingWithin(data, MaxNesting); !ok {
		return &Error{File: file, Line: line, err: errBounds,
			Msg: fmt.Sprintf("nested deeper than %d levels (table and key parts, arrays and inline tables); refused before parsing", MaxNesting)}
	}
	return nil
}

// nestFrame is one open array or inline table; keyParts counts the dotted
// parts of the key being assigned inside an inline table.
type nestFrame struct {
	kind     byte
	keyParts int
}

// nestingWithin reports whether src nests at most limit levels, and if not,
// the line where it goes deeper. It is a single pass over the text that
// knows just enough TOML to skip strings and comments and to tell keys from
// values; it never fails on invalid TOML (the parser reports that), and its
// stack never grows past limit.
func nestingWithin(src []byte, limit int) (int, bool) {
	var (
		line      = 1
		header    int // parts of the current [table] header
		topParts  int // parts of the top-level key being assigned
		dots      int // dots seen in the key being read
		inKey     = true
		stack     []nestFrame
		framesSum int // sum over stack of 1 + keyParts
	)
	depth := func() int { return header + topParts + framesSum + dots }
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\n':
			line++
			if len(stack) == 0 {
				topParts, dots, inKey = 0, 0, true
			}
		case c == '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			i, line = skipString(src, i, line)
		case c == '[' && inKey && len(stack) == 0 && topParts == 0 && dots == 0:
			// A [table] or [[array-of-tables]] header.
			parts, double := 1, i+1 < len(src) && src[i+1] == '['
			if double {
				parts++
				i++
			}
			for i++; i < len(src) && src[i] != ']' && src[i] != '\n'; i++ {
				switch src[i] {
				case '.':
					parts++
				case '"', '\'':
					i, line = skipString(src, i, line)
				}
				if parts > limit {
					return line, false
				}
			}
			header = parts
			if i < len(src) && src[i] == '\n' {
				i-- // an unclosed header: the newline is counted below
			}
			for i+1 < len(src) && src[i+1] == ']' {
				i++
			}
		case inKey && c == '.':
			dots++
		case inKey && c == '=':
			if len(stack) == 0 {
				topParts = dots + 1
			} else {
				stack[len(stack)-1].keyParts = dots + 1
				framesSum += dots + 1
			}
			dots, inKey = 0, false
		case !inKey && (c == '[' || c == '{'):
			stack = append(stack, nestFrame{kind: c})
			framesSum++
			inKey = c == '{'
		case c == ']' || c == '}':
			if n := len(stack); n > 0 && stack[n-1].kind == opener(c) {
				framesSum -= 1 + stack[n-1].keyParts
				stack = stack[:n-1]
			}
			inKey = false
		case c == ',' && len(stack) > 0 && stack[len(stack)-1].kind == '{':
			framesSum -= stack[len(stack)-1].keyParts
			stack[len(stack)-1].keyParts = 0
			dots, inKey = 0, true
		}
		if depth() > limit {
			return line, false
		}
	}
	return line, true
}

// opener is the bracket that closer c closes.
func opener(c byte) byte {
	if c == ']' {
		return '['
	}
	return '{'
}

// skipString moves past the string opening at src[i] (basic, literal, or
// either multi-line form) and returns the index of its last byte and the
// line count after it. A single-line string stops at a newline, as TOML
// requires, so the scan stays in step with the lines even when it is
// unterminated.
func skipString(src []byte, i, line int) (int, int) {
	q := src[i]
	if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
		for j := i + 3; j < len(src); j++ {
			switch {
			case src[j] == '\n':
				line++
			case src[j] == '\\' && q == '"':
				if j+1 < len(src) && src[j+1] == '\n' {
					line++
				}
				j++
			case src[j] == q && j+2 < len(src) && src[j+1] == q && src[j+2] == q:
				j += 2
				for j+1 < len(src) && src[j+1] == q { // up to two quotes may end the content
					j++
				}
				return j, line
			}
		}
		return len(src) - 1, line
	}
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == '\n':
			return j - 1, line
		case src[j] == '\\' && q == '"':
			j++
		case src[j] == q:
			return j, line
		}
	}
	return len(src) - 1, line
}
