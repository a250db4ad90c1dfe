package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/harness-dev/harness/internal/errcode"
)

// Error is one problem found in a config file. Its text is
// `FILE:LINE: KEY: message` (FILE is the base name; LINE is omitted when
// unknown, KEY when the problem has none, as for some TOML syntax errors).
// Every Error is errors.Is errcode.ErrConfigInvalid.
type Error struct {
	File string // base name of the config file
	Line int    // 1-based line of the key or of its table header; 0 if unknown
	Key  string // dotted key, e.g. "harness.reviewer.restart" or "mcp.broken"
	Msg  string
	err  error // underlying cause, if any (a read or TOML syntax error)
}

// Error renders the problem as `FILE:LINE: KEY: message`.
func (e *Error) Error() string {
	return oneLine.Replace(e.where() + ": " + e.Msg)
}

// where is `FILE:LINE: KEY`, the part before the message.
func (e *Error) where() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	return b.String()
}

// oneLine keeps every Error on one line, since joined errors are separated
// by newlines and a TOML message or a quoted value may contain one.
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// Unwrap exposes the config_invalid sentinel and the cause, if any.
func (e *Error) Unwrap() []error {
	if e.err != nil {
		return []error{errcode.ErrConfigInvalid, e.err}
	}
	return []error{errcode.ErrConfigInvalid}
}

// problems collects validation errors for one file.
type problems struct {
	file     string
	pos      positions
	list     []*Error
	warnings []string // rendered like an Error; they do not fail the load
}

// add records a problem at the line of path (or its nearest parent).
func (p *problems) add(path []string, format string, args ...any) {
	p.list = append(p.list, &Error{
		File: p.file,
		Line: p.pos.line(path),
		Key:  keyName(path),
		Msg:  fmt.Sprintf(format, args...),
	})
}

// warn records a warning at the line of path.
func (p *problems) warn(path []string, format string, args ...any) {
	e := &Error{File: p.file, Line: p.pos.line(path), Key: keyName(path), Msg: fmt.Sprintf(format, args...)}
	p.warnings = append(p.warnings, e.Error())
}

// at renders where path is, "FILE:LINE: KEY", for errors found later, at use.
func (p *problems) at(path []string) string {
	return (&Error{File: p.file, Line: p.pos.line(path), Key: keyName(path)}).where()
}

// err returns every problem joined in line order, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Key, b.Key))
	})
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// keyName renders a key path the way TOML writes it, quoting parts that
// are not bare keys so that a name containing a dot stays unambiguous.
func keyName(path []string) string {
	return toml.Key(path).String()
}

// syntaxError turns a TOML decode error in src into an Error that keeps the
// parser's line, except on a table header: there the parser reports the
// line after an unclosed `[harness.x` and the key of the previous table, so
// the header's own line and key are used instead.
func syntaxError(file, src string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, key := pe.Position.Line, pe.LastKey
		if hl, hk, ok := headerAt(tomlInput(src), pe.Position.Start); ok {
			line, key = hl, keyName(hk)
		}
		return &Error{File: file, Line: line, Key: key, Msg: pe.Message, err: err}
	}
	return &Error{File: file, Msg: err.Error(), err: err}
}
