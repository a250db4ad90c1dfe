package mask

import (
	"strings"
	"unicode/utf8"
)

// Rows masks the rows of a screen cols wide in place, as `screen` and a
// masked terminal viewer show them. Rows that fill the width are taken as
// wrapped onto the next one and masked together, so a token the terminal
// wrapped is masked whole; a changed run of rows is cut at the width again
// (the last row takes what is left). A row (or run) that ends in the
// beginning of a literal, MinLen bytes or more, is a secret still being
// printed (its rest comes in the program's next write): that beginning is
// masked too.
func (m *Masker) Rows(rows []string, cols int) {
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && cols > 0 && utf8.RuneCountInString(rows[j]) >= cols {
			j++
		}
		if j == i {
			rows[i] = m.openEnd(m.String(rows[i]))
			i++
			continue
		}
		joined := strings.Join(rows[i:j+1], "")
		if masked := m.openEnd(m.String(joined)); masked != joined {
			rs := []rune(masked)
			for k := i; k <= j; k++ {
				n := min(cols, len(rs))
				if k == j {
					n = len(rs)
				}
				rows[k], rs = string(rs[:n]), rs[n:]
			}
		}
		i = j + 1
	}
}

// openEnd masks the longest beginning of a literal, at least MinLen bytes,
// that s ends with.
func (m *Masker) openEnd(s string) string {
	t := shapesOnly
	if m != nil {
		if c := m.cur.Load(); c != nil {
			t = c
		}
	}
	for i := max(0, len(s)-t.maxLen+1); i+MinLen <= len(s); i++ {
		k := uint16(s[i])<<8 | uint16(s[i+1])
		if t.litPairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		rest := s[i:]
		for _, lit := range t.lits[key4(rest)] {
			if len(lit) > len(rest) && strings.HasPrefix(lit, rest) {
				return s[:i] + Masked
			}
		}
	}
	return s
}
