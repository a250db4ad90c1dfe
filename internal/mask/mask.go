// Package mask hides secrets in text the daemon renders for a reader
// (docs/design/masking.md): every value of an env_file and of a header (literals that
// the daemon knows, replaced wherever they occur), and well-known
// credential shapes (API keys, tokens, JWTs, `Bearer …`) that an agent
// may print after reading them from anywhere. Each becomes Masked.
//
// One Masker serves the whole daemon. It is swapped atomically (Set) when
// a reload brings new env_file values, and read without a lock, so it can
// run on every activity entry: a text is scanned once, left to right, with
// a 64 Kib table of the byte pairs that can start a secret; only at such a
// pair does it look further (a map of the literals by their first four
// bytes, and the shape rules). A text without a secret is returned as it
// came, without an allocation.
//
// What is not masked, on purpose: the raw output ring and the attach
// stream a person watches (they are the program's bytes, terminal
// sequences and all); values shorter than MinLen bytes (a port, `true`:
// replacing every such word would make text unreadable and hide nothing
// worth hiding); a secret split by a line break (a terminal wraps a long
// token across rows: each row is masked on its own, so the shape rules
// still catch the part that carries the prefix).
package mask

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
)

// Masked replaces every secret.
const Masked = "[masked]"

// MinLen is the shortest literal (env_file or header value) replaced.
const MinLen = 6

// Masker replaces secrets in text. The zero value and nil mask the
// credential shapes only. Safe for concurrent use.
type Masker struct {
	cur atomic.Pointer[table]
}

// New returns a Masker of literals (and the shapes).
func New(literals ...string) *Masker {
	m := &Masker{}
	m.Set(literals)
	return m
}

// Set replaces the literal secrets (the credential shapes are always
// masked). Values shorter than MinLen and duplicates are dropped; a value
// whose JSON string form differs (quotes, backslashes, control bytes) is
// kept in that form too, so it is also masked inside JSON text.
func (m *Masker) Set(literals []string) {
	m.cur.Store(build(literals))
}

// Generation names the literals in force: it changes at every Set, so
// text masked at one generation and kept needs masking again at another.
// Read it before masking: text masked after it was read is masked at that
// generation or a later one.
func (m *Masker) Generation() uint64 {
	if m != nil {
		if t := m.cur.Load(); t != nil {
			return t.gen
		}
	}
	return shapesOnly.gen
}

// Len is the number of literal forms held, for daemon_info and tests.
func (m *Masker) Len() int {
	if m == nil {
		return 0
	}
	t := m.cur.Load()
	if t == nil {
		return 0
	}
	return t.n
}

// String returns s with every secret replaced by Masked; s itself when
// there is none.
func (m *Masker) String(s string) string {
	t := shapesOnly
	if m != nil {
		if c := m.cur.Load(); c != nil {
			t = c
		}
	}
	return t.mask(s)
}

// Strings masks each element of ss in place and returns ss.
func (m *Masker) Strings(ss []string) []string {
	for i, s := range ss {
		ss[i] = m.String(s)
	}
	return ss
}

// Func is String as a function value (nil-safe), for packages that take
// a func(string) string and do not import this one.
func (m *Masker) Func() func(string) string {
	return m.String
}

// table is one immutable set of literals plus the shape triggers.
type table struct {
	// pairs has a bit per byte pair (s[i], s[i+1]) that may start a
	// literal or a shape.
	pairs [1 << 16 / 64]uint64
	// litPairs has the bits of the pairs that start a literal.
	litPairs [1 << 16 / 64]uint64
	// lits maps the first four bytes of each literal to the literals
	// with that start, longest first.
	lits map[uint32][]string
	n    int
	// maxLen is the longest literal's length.
	maxLen int
	gen    uint64 // Generation: tables counts them
}

// tables numbers every table built.
var tables atomic.Uint64

var shapesOnly = build(nil)

// shapeStarts are the byte pairs that begin a credential shape (see
// shapeAt).
var shapeStarts = []string{"sk", "gh", "gi", "xo", "AK", "AS", "ey", "Be", "be", "BE"}

func build(literals []string) *table {
	t := &table{lits: map[uint32][]string{}, gen: tables.Add(1)}
	for _, p := range shapeStarts {
		setPair(&t.pairs, p[0], p[1])
	}
	var forms []string
	for _, s := range literals {
		if len(s) < MinLen {
			continue
		}
		forms = append(forms, s)
		if b, err := json.Marshal(s); err == nil && string(b[1:len(b)-1]) != s {
			forms = append(forms, string(b[1:len(b)-1]))
		}
	}
	slices.Sort(forms)
	forms = slices.Compact(forms)
	for _, s := range forms {
		setPair(&t.pairs, s[0], s[1])
		setPair(&t.litPairs, s[0], s[1])
		k := key4(s)
		t.lits[k] = append(t.lits[k], s)
		t.maxLen = max(t.maxLen, len(s))
	}
	for _, l := range t.lits {
		slices.SortStableFunc(l, func(a, b string) int { return len(b) - len(a) })
	}
	t.n = len(forms)
	return t
}

func setPair(bits *[1 << 16 / 64]uint64, a, b byte) {
	k := uint16(a)<<8 | uint16(b)
	bits[k>>6] |= 1 << (k & 63)
}

// mask scans s once; at each position whose pair may start a secret it
// takes the longest literal or shape that starts there.
func (t *table) mask(s string) string {
	var b *strings.Builder
	last := 0 // s[last:] is not yet copied to b
	for i := 0; i+1 < len(s); i++ {
		k := uint16(s[i])<<8 | uint16(s[i+1])
		if t.pairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		from, to := i, i
		if i+4 <= len(s) && t.litPairs[k>>6]&(1<<(k&63)) != 0 {
			for _, lit := range t.lits[key4(s[i:])] {
				if strings.HasPrefix(s[i:], lit) {
					to = i + len(lit)
					break
				}
			}
		}
		if f, e := shapeAt(s, i); e > to {
			from, to = f, e
		}
		if to == from {
			continue
		}
		if b == nil {
			b = &strings.Builder{}
			b.Grow(len(s))
		}
		b.WriteString(s[last:from])
		b.WriteString(Masked)
		last = to
		i = to - 1
	}
	if b == nil {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// key4 is the first four bytes of s (len(s) >= 4) as a map key.
func key4(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
