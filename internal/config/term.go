package config

import (
	"regexp"
	"strconv"
	"time"

	"github.com/harness-dev/harness/internal/term"
)

// Defaults of the terminal keys of [harness.*] (docs/design/terminals.md).
const (
	DefaultTermCols  = term.DefaultCols
	DefaultTermRows  = term.DefaultRows
	DefaultIdleAfter = term.DefaultIdleAfter
)

var termSizeRE = regexp.MustCompile(`^([0-9]{1,4})x([0-9]{1,4})$`)

// termSize decodes term_size = "COLSxROWS".
func (d *decoder) termSize(path []string, v any) (cols, rows int) {
	s, ok := d.str(path, v)
	if !ok {
		return DefaultTermCols, DefaultTermRows
	}
	m := termSizeRE.FindStringSubmatch(s)
	if m == nil {
		d.add(path, `invalid terminal size %q (want "COLSxROWS", e.g. "120x40")`, s)
		return DefaultTermCols, DefaultTermRows
	}
	cols, _ = strconv.Atoi(m[1])
	rows, _ = strconv.Atoi(m[2])
	if cols < term.MinCols || cols > term.MaxCols || rows < term.MinRows || rows > term.MaxRows {
		d.add(path, "terminal size %q out of range (want %d..%d columns and %d..%d rows)",
			s, term.MinCols, term.MaxCols, term.MinRows, term.MaxRows)
		return DefaultTermCols, DefaultTermRows
	}
	return cols, rows
}

// idleAfter decodes idle_after, seconds of silence after which a harness
// is idle; it must be positive.
func (d *decoder) idleAfter(path []string, v any) time.Duration {
	if n, ok := v.(int64); ok && n == 0 {
		d.add(path, "must be > 0 seconds, not 0")
		return DefaultIdleAfter
	}
	if f, ok := v.(float64); ok && f == 0 {
		d.add(path, "must be > 0 seconds, not 0")
		return DefaultIdleAfter
	}
	return d.seconds(path, v, DefaultIdleAfter)
}
